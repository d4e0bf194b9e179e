/* SPDX-License-Identifier: ISC */
/* `cloak check`: which protections this host provides, per backend. */
#ifndef CLOAK_CHECK_CHECK_H
#define CLOAK_CHECK_CHECK_H

#include "cli/options.h"

int check_run(const struct options *o);

#endif

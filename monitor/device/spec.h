/* SPDX-License-Identifier: ISC */
/* Pieces of --block and --channel specs shared by both parsers. */
#ifndef CLOAK_DEVICE_SPEC_H
#define CLOAK_DEVICE_SPEC_H

#include <stddef.h>

#include "fail.h"

/* NAME=...: 1..CLOAK_NAME_MAX-1 characters from [A-Za-z0-9_.-], so it fits
 * the ABI's NUL-terminated name field and reads well in messages. Copies
 * the name into `name` and points *rest after the '='. */
int spec_name(const char *spec, const char *what, char *name, const char **rest,
	      struct fail *f);

/* Splits the next ",option" off *opts: its start and length; 0 when there
 * is none left. */
int spec_next_option(const char **opts, const char **opt, size_t *len);

#endif

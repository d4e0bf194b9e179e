/* Host probing: `cloak check` and the --verbose start-up report. */
#ifndef CLOAK_HOSTCHECK_H
#define CLOAK_HOSTCHECK_H

#include "guestmem.h"
#include "options.h"

int hostcheck_run(const struct options *o);
void hostcheck_report_brief(enum gm_backend backend);

#endif

/* SPDX-License-Identifier: ISC */
/* The boot-info page and the guest's argv, written before the first
 * instruction runs, by the runner once it knows the vCPU's TSC rate. */
#ifndef CLOAK_RUNNER_BOOT_INFO_H
#define CLOAK_RUNNER_BOOT_INFO_H

#include <stdint.h>

#include "fail.h"
#include "mem/guestmem.h"

/* argv[0] is the guest's name; argc is bounded by CLOAK_ARGC_MAX and the
 * strings by CLOAK_CMDLINE_MAX (CLOAK_EXIT_USAGE beyond). */
int boot_write_info(struct guestmem *gm, uint64_t tsc_khz, uint64_t heap_start,
		    uint64_t capabilities, int argc, char *const argv[], struct fail *f);

#endif

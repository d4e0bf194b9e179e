/* The boot-info page and the guest's argv, written before the first
 * instruction runs. */
#ifndef CLOAK_BOOT_H
#define CLOAK_BOOT_H

#include <stddef.h>
#include <stdint.h>

#include "vm.h"

/* argv[0] is the guest's name; argc is bounded by CLOAK_ARGC_MAX and the
 * strings by CLOAK_CMDLINE_MAX. One-line error on overflow. */
int boot_write_info(struct vm *vm, uint64_t heap_start, uint64_t capabilities, int argc,
		    char *const argv[], char *err, size_t errlen);

#endif

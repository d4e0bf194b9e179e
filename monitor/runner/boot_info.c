/* SPDX-License-Identifier: ISC */
/* Boot info and argv; see boot_info.h. */
#include "boot_info.h"

#include <string.h>

int boot_write_info(struct guestmem *gm, uint64_t tsc_khz, uint64_t heap_start,
		    uint64_t capabilities, int argc, char *const argv[], struct fail *f)
{
	if (argc < 1 || argc > CLOAK_ARGC_MAX)
		return fail_set(f, CLOAK_EXIT_USAGE, "%d guest arguments, at most %d fit",
				argc - 1, CLOAK_ARGC_MAX - 1);
	struct cloak_boot_info bi;
	memset(&bi, 0, sizeof bi);
	bi.magic = CLOAK_BOOT_MAGIC;
	bi.abi_version = CLOAK_ABI_VERSION;
	bi.argc = (uint32_t)argc;
	bi.mem_size = gm_size(gm);
	bi.heap_start = heap_start;
	bi.tsc_khz = tsc_khz;
	bi.capabilities = capabilities;
	bi.memory_backend = gm_backend_abi(gm_backend(gm));
	uint64_t off = 0;
	for (int i = 0; i < argc; i++) {
		size_t n = strlen(argv[i]) + 1;
		if (n > CLOAK_CMDLINE_MAX - off)
			return fail_set(f, CLOAK_EXIT_USAGE, "guest arguments are longer than "
					"%llu bytes: shorten them",
					(unsigned long long)CLOAK_CMDLINE_MAX);
		if (gm_copy_to(gm, gpa(CLOAK_GPA_CMDLINE + off), argv[i], n) != GM_OK)
			return fail_set(f, CLOAK_EXIT_INTERNAL, "cannot write guest arguments");
		bi.argv[i] = CLOAK_GPA_CMDLINE + off;
		off += n;
	}
	if (gm_copy_to(gm, gpa(CLOAK_GPA_BOOTINFO), &bi, sizeof bi) != GM_OK)
		return fail_set(f, CLOAK_EXIT_INTERNAL, "cannot write boot info");
	return 0;
}

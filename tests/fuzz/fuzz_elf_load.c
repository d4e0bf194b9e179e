/* SPDX-License-Identifier: ISC */
/*
 * libFuzzer target: the ELF loader on arbitrary bytes, loading into 16 MiB
 * of anonymous guest memory created once. Besides crashes and sanitizer
 * reports it checks what elf_load() promises: a rejection comes with one
 * non-empty line, and an accepted image lies inside guest memory above the
 * reserved area with its entry point inside it.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloak/abi.h"
#include "setup/elf_load.h"
#include "mem/guestmem.h"

#define FUZZ_MEM (16ull << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct guestmem *guest_memory(void)
{
	static struct guestmem *gm;
	if (!gm) {
		struct fail f = { 0 };
		gm = gm_create(GM_BACKEND_ANON, FUZZ_MEM, -1, &f);
		if (!gm) {
			fprintf(stderr, "fuzz_elf_load: %s\n", f.msg);
			abort();
		}
	}
	return gm;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct guestmem *gm = guest_memory();
	struct elf_image im;
	struct fail f = { 0 };
	if (elf_load(gm, data, size, &im, &f) != 0) {
		if (f.msg[0] == '\0' || strchr(f.msg, '\n') || f.status != CLOAK_EXIT_BADIMAGE) {
			fprintf(stderr, "rejection reason is not one line: \"%s\"\n", f.msg);
			abort();
		}
		return 0;
	}
	if (im.lowest < CLOAK_GPA_GUEST_MIN || im.highest > FUZZ_MEM || im.lowest >= im.highest ||
	    im.lowest % CLOAK_PAGE_SIZE || im.highest % CLOAK_PAGE_SIZE ||
	    im.entry < im.lowest || im.entry >= im.highest || im.abi_version != CLOAK_ABI_VERSION) {
		fprintf(stderr, "accepted image breaks the loader's promises: entry 0x%llx "
			"[0x%llx, 0x%llx) abi %u\n", (unsigned long long)im.entry,
			(unsigned long long)im.lowest, (unsigned long long)im.highest, im.abi_version);
		abort();
	}
	return 0;
}

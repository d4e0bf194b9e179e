/* SPDX-License-Identifier: ISC */
/*
 * Builds the guest's initial page tables: an identity map of guest RAM.
 * Below `fine_end` (the image's end rounded up to 2 MiB) pages are 4 KiB,
 * so that each gets the access of what it holds:
 *   page 0                       not present: null dereferences fault
 *   the monitor's reserved area  read-write, no-execute
 *   image segments               read-only, read-write or executable, as
 *                                the ELF says (never writable and executable)
 *   holes between segments       not present: guard pages (the runtime puts
 *                                one below its stack)
 *   the rest                     read-write, no-execute (heap), in 2 MiB
 *                                pages above fine_end
 */
#ifndef CLOAK_PAGETABLE_H
#define CLOAK_PAGETABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "x86.h"


/* A page-aligned range of the image and its access. */
struct pt_range {
	uint64_t start, end;
	bool write, exec;
};

struct pt_spec {
	uint64_t mem_size;             /* 2 MiB multiple, CLOAK_MEM_MIN..MAX */
	const struct pt_range *ranges; /* the image's segments; may be empty */
	unsigned nranges;
	bool nx;                       /* the CPU has NX (EFER.NXE will be set) */
};

/* Page-table bytes the spec needs (0 if it is unsupported). */
size_t pt_bytes(const struct pt_spec *spec);

/* Fills buf (pt_bytes() bytes, zeroed by the caller) with tables that will
 * live at guest-physical `base`. Returns CR3 (base), or 0 if the spec is
 * unsupported or the buffer too small. */
uint64_t pt_build(const struct pt_spec *spec, uint64_t base, uint64_t *buf, size_t buflen);

#endif

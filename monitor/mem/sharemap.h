/* SPDX-License-Identifier: ISC */
/*
 * Which guest pages are shared with the host: one bit per 4 KiB page.
 * Range operations work a 64-bit word at a time, so sharing or checking a
 * 1 GiB range touches 4 KiB of bitmap, not 262,144 bits one by one.
 */
#ifndef CLOAK_SHAREMAP_H
#define CLOAK_SHAREMAP_H

#include <stdbool.h>
#include <stdint.h>

struct sharemap {
	uint64_t npages;
	uint64_t *words;
	uint64_t nshared; /* population count, kept up to date */
};

int sharemap_init(struct sharemap *m, uint64_t npages);
void sharemap_free(struct sharemap *m);
/* Ranges must lie inside [0, npages); callers validate first. */
void sharemap_set(struct sharemap *m, uint64_t first, uint64_t count);
void sharemap_clear(struct sharemap *m, uint64_t first, uint64_t count);
/* True if every page in [first, first+count) is shared; count 0 is true. */
bool sharemap_all_set(const struct sharemap *m, uint64_t first, uint64_t count);
/* Next shared page at or after `from`, or npages if none. */
uint64_t sharemap_next_set(const struct sharemap *m, uint64_t from);

#endif

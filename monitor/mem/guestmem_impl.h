/* SPDX-License-Identifier: ISC */
/*
 * Inside guest memory: the structure behind the opaque struct guestmem and
 * the helpers the runner's protocol (guestmem.c) and the device process's
 * (device_view.c) share. Private to the mem/ folder (tests/unit/
 * structure.bats checks): everyone else reaches guest memory only through
 * the checked accesses of guestmem.h.
 */
#ifndef CLOAK_MEM_GUESTMEM_IMPL_H
#define CLOAK_MEM_GUESTMEM_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "guestmem.h"
#include "sharemap.h"

struct guestmem {
	struct membacking mb;
	struct sharemap shared;
	bool protect;
	/* SHARE after PROTECT takes only pages shared then (gm_fix_window). */
	bool window_fixed;
	bool log_refusals;
	uint64_t refused;
	uint64_t wiped; /* bytes wiped by gm_destroy itself (given-up memory) */
};

/* Calls fn on each maximal run of pages whose share bit is `shared`. */
void gm_for_each_run(struct guestmem *gm, bool shared,
		     void (*fn)(struct guestmem *gm, uint64_t first, uint64_t count));
/* Unmaps pages [first, first+count) of the host mapping. */
void gm_unmap_run(struct guestmem *gm, uint64_t first, uint64_t count);
/* Unmaps the pages of [first, first+count) that are shared now. */
void gm_unmap_shared_in(struct guestmem *gm, uint64_t first, uint64_t count);
/* SHARE/UNSHARE validation: aligned, non-empty, inside memory, no wrap;
 * *first is the first page. */
enum gm_status gm_share_range(struct guestmem *gm, gpa_t g, uint64_t npages, uint64_t *first);
/* Does [first, first+count) touch the monitor window? */
bool gm_touches_window(uint64_t first, uint64_t count);
/* SHARE and UNSHARE on one process's view of guest memory, for gm_share
 * and gm_unshare (the runner's, or the one process's) and the device
 * process's (device_view.c). fixed: the shared window can no longer grow
 * (only pages shared now may be shared again, else GM_EPERM); unmap: the
 * pages unshared are unmapped from this process for good. */
enum gm_status gm_share_in_view(struct guestmem *gm, gpa_t g, uint64_t npages, bool fixed);
enum gm_status gm_unshare_in_view(struct guestmem *gm, gpa_t g, uint64_t npages, bool unmap);

#endif

/* SPDX-License-Identifier: ISC */
/*
 * The guest heap behind malloc/free/calloc/realloc/aligned_alloc.
 *
 * Layout: the range given to cloak_heap_init() is cut into 4 KiB pages; a
 * table of page descriptors sits at its start (32 bytes per page, about
 * 0.8%), the pages after it hold data. Sizes up to CLOAK_HEAP_SMALL_MAX are
 * served from size classes, each page holding blocks of one class (no
 * per-block header); larger sizes take runs of whole pages, kept in a
 * coalescing free list. Pages that were never handed out are known to be
 * zero (the monitor gives guest RAM zeroed), so calloc() only clears memory
 * that was used before.
 *
 * One vCPU and no interrupts: nothing here is locked.
 */
#ifndef CLOAK_RT_HEAP_H
#define CLOAK_RT_HEAP_H

#include <stddef.h>

#define CLOAK_HEAP_PAGE 4096u
#define CLOAK_HEAP_SMALL_MAX 2048u

/* Hand [start, end) to the heap (rounded inwards to pages). The range must
 * read as zero, as guest RAM from the monitor does: the heap does not clear
 * it. Calling it again forgets every earlier allocation. */
void cloak_heap_init(void *start, void *end);
/* The runtime's start-up: cloak_heap_init() on a heap never used before
 * (its state still zero, as .bss is at boot), then the first npages pages
 * handed out at once as one allocation of whole pages (the bounce pool).
 * Returns them, or NULL if they do not fit. A short path: every guest
 * instruction at boot counts where KVM emulates guest code. */
void *cloak_heap_boot(void *start, void *end, size_t npages);

/* npages contiguous, page-aligned pages (e.g. for I/O bounce buffers that
 * get shared with the monitor page by page). Release with free(). Returns
 * NULL when npages is 0 or the heap has no such run. */
void *cloak_heap_alloc_pages(size_t npages);

/* Bytes usable in a live block (at least what was asked for). */
size_t cloak_heap_usable_size(const void *ptr);

struct cloak_heap_stats {
	size_t pages_total;  /* data pages the heap manages */
	size_t pages_touched; /* pages ever handed out (the rest are still zero) */
	size_t pages_free;   /* touched pages now in the free-run list */
	size_t pages_small;  /* pages holding small blocks (incl. cached empty ones) */
	size_t pages_large;  /* pages in live large runs */
	size_t small_live;   /* live small blocks */
};
void cloak_heap_stats(struct cloak_heap_stats *st);

/* Walks every descriptor and list and checks the heap's invariants.
 * Returns 0 if consistent, otherwise a negative number naming the first
 * broken rule (see malloc.c). Costs time: for tests and debugging. */
int cloak_heap_check(void);

#endif

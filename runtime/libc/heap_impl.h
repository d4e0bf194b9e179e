/* SPDX-License-Identifier: ISC */
/*
 * Private to the heap (malloc.c, heap_check.c): the page descriptor and the
 * heap's state. The rules they keep are described at the top of malloc.c.
 */
#ifndef CLOAK_RT_HEAP_IMPL_H
#define CLOAK_RT_HEAP_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include <cloak/heap.h>

#define PAGE ((size_t)CLOAK_HEAP_PAGE)
#define PAGE_SHIFT 12
#define SMALL_MAX ((size_t)CLOAK_HEAP_SMALL_MAX)
#define NCLASS 24

_Static_assert(PAGE == (size_t)1 << PAGE_SHIFT, "page shift");

enum { KIND_NONE = 0, KIND_SMALL = 1, KIND_LARGE = 2, KIND_FREE = 3 };
#define KIND_MASK 0x0f
#define KIND_FRESH 0x10 /* SMALL page from untouched memory: its bump area is zero */

struct hpage {
	void *free;                /* SMALL: freed blocks of this page */
	struct hpage *next, *prev; /* SMALL: class list; FREE head: free_runs */
	uint32_t count;            /* LARGE/FREE head and tail: run length in
				    * pages; SMALL: bump offset */
	uint16_t used;             /* SMALL: live blocks */
	uint8_t kind;
	uint8_t cls;
};
_Static_assert(sizeof(struct hpage) == 32, "descriptor size (heap.h promises 32 bytes)");

/* Four classes per doubling above 128 bytes; every power of two from 16 to
 * 2048 is a class, so blocks of those classes are aligned to their size. */
static const uint16_t class_size[NCLASS] = {
	16,  32,  48,  64,  80,  96,  112, 128,  160,  192,  224,  256,
	320, 384, 448, 512, 640, 768, 896, 1024, 1280, 1536, 1792, 2048,
};

struct heap_state {
	struct hpage *desc; /* descriptor table */
	char *base;         /* first data page */
	size_t npages;      /* data pages */
	size_t brk;         /* pages [brk, npages) were never handed out */
	struct hpage *free_runs;
	struct hpage *avail[NCLASS];
};
extern struct heap_state cloak_heap_state;
#define heap cloak_heap_state

static inline char *page_addr(const struct hpage *d)
{
	return heap.base + ((size_t)(d - heap.desc) << PAGE_SHIFT);
}

#endif

/* SPDX-License-Identifier: ISC */
/*
 * The guest heap: malloc, free, calloc, realloc, aligned_alloc.
 * Design notes are in <cloak/heap.h>; the rules the code keeps are:
 *
 *  - Data pages are described by a table of `struct hpage`, one per page.
 *    Memory is a sequence of runs below `brk`; pages at or above `brk`
 *    were never handed out and still read as zero.
 *  - A run is SMALL (one page of same-size blocks), LARGE (a live
 *    allocation of whole pages) or FREE. The head and the tail descriptor
 *    of every run are accurate (kind, and length in `count` for LARGE and
 *    FREE); descriptors inside a run are stale and never read. That is
 *    enough to coalesce: the neighbours of a run are the head after it and
 *    the tail before it.
 *  - No two FREE runs are adjacent. FREE runs are on `free_runs` (first
 *    fit). Their memory was used, so calloc clears it.
 *  - A SMALL page hands out blocks first from its free list, then by
 *    bumping `count` (the offset of its first never-used byte). It sits on
 *    its class list `avail[c]` exactly while it has room. An empty page goes
 *    back to the page pool unless it is the only page on its class list,
 *    so that a malloc/free loop does not churn pages.
 *
 * Sizes are chosen for short instruction paths (every guest instruction
 * costs ~640 ns here): a small malloc or free is a table lookup, a list pop
 * or a bump, and a few stores.
 */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cloak/heap.h>

#include "heap_impl.h"

struct heap_state cloak_heap_state;

static inline unsigned size_class(size_t size)
{
	size_t s;
	unsigned b;
	if (size <= 128)
		return size ? (unsigned)((size - 1) >> 4) : 0;
	s = size - 1;
	b = 63u - (unsigned)__builtin_clzll(s); /* 7..10 */
	return 8 + (b - 7) * 4 + (unsigned)((s >> (b - 2)) & 3);
}

static inline void list_push(struct hpage **head, struct hpage *d)
{
	d->prev = NULL;
	d->next = *head;
	if (*head)
		(*head)->prev = d;
	*head = d;
}

static inline void list_remove(struct hpage **head, struct hpage *d)
{
	if (d->prev)
		d->prev->next = d->next;
	else
		*head = d->next;
	if (d->next)
		d->next->prev = d->prev;
}

/* Writes head and tail of a run of n pages. */
static inline void mark_run(struct hpage *d, size_t n, uint8_t kind)
{
	struct hpage *tail = d + n - 1;
	d->kind = kind;
	d->count = (uint32_t)n;
	tail->kind = kind;
	tail->count = (uint32_t)n;
}

/* n pages, first fit among free runs, else from untouched memory. The
 * caller marks the run. *fresh tells whether the pages read as zero. */
static struct hpage *run_alloc(size_t n, bool *fresh)
{
	struct hpage *d;
	for (d = heap.free_runs; d; d = d->next) {
		if (d->count >= n) {
			list_remove(&heap.free_runs, d);
			if (d->count > n) {
				struct hpage *rest = d + n;
				mark_run(rest, d->count - n, KIND_FREE);
				list_push(&heap.free_runs, rest);
			}
			*fresh = false;
			return d;
		}
	}
	if (heap.npages - heap.brk < n)
		return NULL;
	d = heap.desc + heap.brk;
	heap.brk += n;
	*fresh = true;
	return d;
}

/* Gives n pages at d back, merging with free neighbours. */
static void run_free(struct hpage *d, size_t n)
{
	struct hpage *next = d + n;
	if (next < heap.desc + heap.brk && next->kind == KIND_FREE) {
		list_remove(&heap.free_runs, next);
		n += next->count;
	}
	if (d > heap.desc && d[-1].kind == KIND_FREE) {
		struct hpage *prev = d - d[-1].count;
		list_remove(&heap.free_runs, prev);
		n += prev->count;
		d = prev;
	}
	mark_run(d, n, KIND_FREE);
	list_push(&heap.free_runs, d);
}

static void *small_alloc_slow(unsigned c, bool *zeroed)
{
	bool fresh;
	struct hpage *d = run_alloc(1, &fresh);
	if (!d)
		return NULL;
	d->kind = KIND_SMALL | (fresh ? KIND_FRESH : 0);
	d->cls = (uint8_t)c;
	d->used = 1;
	d->free = NULL;
	d->count = class_size[c];
	/* Every class fits at least two blocks a page: the page has room. */
	list_push(&heap.avail[c], d);
	*zeroed = fresh;
	return page_addr(d);
}

static inline void *small_alloc(unsigned c, bool *zeroed)
{
	struct hpage *d = heap.avail[c];
	size_t size = class_size[c];
	void *p;
	if (!d)
		return small_alloc_slow(c, zeroed);
	p = d->free;
	if (p) {
		d->free = *(void **)p;
		*zeroed = false;
	} else {
		p = page_addr(d) + d->count;
		d->count += (uint32_t)size;
		*zeroed = (d->kind & KIND_FRESH) != 0;
	}
	d->used++;
	if (!d->free && d->count + size > PAGE)
		list_remove(&heap.avail[c], d); /* full */
	return p;
}

static void *large_alloc(size_t size, bool *zeroed)
{
	size_t n;
	struct hpage *d;
	if (size > heap.npages << PAGE_SHIFT)
		return NULL;
	n = (size + PAGE - 1) >> PAGE_SHIFT;
	d = run_alloc(n, zeroed);
	if (!d)
		return NULL;
	mark_run(d, n, KIND_LARGE);
	return page_addr(d);
}

static inline void *alloc(size_t size, bool *zeroed)
{
	void *p = size <= SMALL_MAX ? small_alloc(size_class(size), zeroed) : large_alloc(size, zeroed);
	if (!p)
		errno = ENOMEM;
	return p;
}

_Noreturn static void bad_pointer(void)
{
	__cloak_assert_fail("free/realloc: pointer not from malloc, or already freed", __FILE__,
			    __LINE__);
}

/* The descriptor of a live block; ends the guest for pointers that cannot
 * be one (outside the heap, inside a block, on a free page, an emptied
 * page). Freeing a small block twice while its page has other live blocks
 * is not caught: that would cost a bitmap and instructions on every call. */
static inline __attribute__((always_inline)) struct hpage *block_page(const void *ptr)
{
	size_t off = (size_t)((uintptr_t)ptr - (uintptr_t)heap.base);
	size_t in_page = off & (PAGE - 1);
	struct hpage *d;
	if (off >= heap.brk << PAGE_SHIFT)
		bad_pointer();
	d = heap.desc + (off >> PAGE_SHIFT);
	switch (d->kind & KIND_MASK) {
	case KIND_SMALL:
		if (d->used == 0 || in_page >= d->count || in_page % class_size[d->cls])
			bad_pointer();
		return d;
	case KIND_LARGE:
		if (in_page)
			bad_pointer();
		return d;
	default:
		bad_pointer();
	}
}

static void small_free(struct hpage *d, void *p)
{
	unsigned c = d->cls;
	bool was_full = !d->free && d->count + class_size[c] > PAGE;
	*(void **)p = d->free;
	d->free = p;
	d->used--;
	if (was_full) {
		list_push(&heap.avail[c], d);
	} else if (d->used == 0 && (d->prev || d->next)) {
		list_remove(&heap.avail[c], d);
		run_free(d, 1);
	}
}

void *malloc(size_t size)
{
	bool zeroed;
	return alloc(size, &zeroed);
}

void free(void *ptr)
{
	struct hpage *d;
	if (!ptr)
		return;
	d = block_page(ptr);
	if ((d->kind & KIND_MASK) == KIND_SMALL)
		small_free(d, ptr);
	else
		run_free(d, d->count);
}

void *calloc(size_t nmemb, size_t size)
{
	size_t total;
	bool zeroed;
	void *p;
	if (__builtin_mul_overflow(nmemb, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	p = alloc(total, &zeroed);
	if (p && !zeroed)
		memset(p, 0, total);
	return p;
}

/* Resizes the LARGE run at d (n pages) to `want` pages without moving it,
 * if the pages after it allow. */
static bool large_resize_in_place(struct hpage *d, size_t want)
{
	size_t n = d->count;
	struct hpage *next = d + n;
	if (want <= n) {
		if (want < n) {
			mark_run(d, want, KIND_LARGE);
			run_free(d + want, n - want);
		}
		return true;
	}
	if (next < heap.desc + heap.brk) {
		size_t need = want - n;
		if (next->kind != KIND_FREE || next->count < need)
			return false;
		list_remove(&heap.free_runs, next);
		if (next->count > need) {
			mark_run(next + need, next->count - need, KIND_FREE);
			list_push(&heap.free_runs, next + need);
		}
	} else {
		/* The run ends at brk: grow into untouched pages. */
		if (heap.npages - heap.brk < want - n)
			return false;
		heap.brk += want - n;
	}
	mark_run(d, want, KIND_LARGE);
	return true;
}

void *realloc(void *ptr, size_t size)
{
	struct hpage *d;
	size_t old;
	bool zeroed;
	void *p;

	if (!ptr)
		return malloc(size);
	if (size == 0) {
		free(ptr);
		return NULL;
	}
	d = block_page(ptr);
	if ((d->kind & KIND_MASK) == KIND_SMALL) {
		old = class_size[d->cls];
		/* Shrinking keeps the block unless it would waste over half. */
		if (size <= old && (size > old / 2 || old <= 16))
			return ptr;
	} else {
		old = (size_t)d->count << PAGE_SHIFT;
		if (size <= heap.npages << PAGE_SHIFT) {
			size_t want = (size + PAGE - 1) >> PAGE_SHIFT;
			if (large_resize_in_place(d, want))
				return ptr;
		}
	}
	p = alloc(size, &zeroed);
	if (!p)
		return NULL;
	memcpy(p, ptr, size < old ? size : old);
	free(ptr);
	return p;
}

void *aligned_alloc(size_t alignment, size_t size)
{
	bool zeroed;
	size_t n, extra, lead;
	struct hpage *d;

	if (alignment == 0 || (alignment & (alignment - 1))) {
		errno = EINVAL;
		return NULL;
	}
	if (alignment <= 16)
		return alloc(size, &zeroed);
	if (size <= SMALL_MAX && alignment <= SMALL_MAX) {
		/* Power-of-two classes hold blocks aligned to their size. */
		size_t s = size > alignment ? size : alignment;
		s = (size_t)1 << (64 - __builtin_clzll(s - 1));
		return alloc(s, &zeroed);
	}
	if (alignment <= PAGE)
		return alloc(size > SMALL_MAX ? size : SMALL_MAX + 1, &zeroed);

	/* Over-allocate by alignment - PAGE, then give back both ends. */
	if (size > heap.npages << PAGE_SHIFT || alignment > heap.npages << PAGE_SHIFT) {
		errno = ENOMEM;
		return NULL;
	}
	n = size ? (size + PAGE - 1) >> PAGE_SHIFT : 1;
	extra = (alignment >> PAGE_SHIFT) - 1;
	d = run_alloc(n + extra, &zeroed);
	if (!d) {
		errno = ENOMEM;
		return NULL;
	}
	lead = (size_t)(-(uintptr_t)page_addr(d) & (alignment - 1)) >> PAGE_SHIFT;
	mark_run(d + lead, n, KIND_LARGE);
	if (lead)
		run_free(d, lead);
	if (extra > lead)
		run_free(d + lead + n, extra - lead);
	return page_addr(d + lead);
}

int posix_memalign(void **memptr, size_t alignment, size_t size)
{
	void *p;
	if (alignment < sizeof(void *) || (alignment & (alignment - 1)))
		return EINVAL;
	p = aligned_alloc(alignment, size);
	if (!p)
		return ENOMEM;
	*memptr = p;
	return 0;
}

void *cloak_heap_alloc_pages(size_t npages)
{
	bool fresh;
	struct hpage *d;
	if (npages == 0 || npages > heap.npages)
		return NULL;
	d = run_alloc(npages, &fresh);
	if (!d)
		return NULL;
	mark_run(d, npages, KIND_LARGE);
	return page_addr(d);
}

size_t cloak_heap_usable_size(const void *ptr)
{
	struct hpage *d;
	if (!ptr)
		return 0;
	d = block_page(ptr);
	if ((d->kind & KIND_MASK) == KIND_SMALL)
		return class_size[d->cls];
	return (size_t)d->count << PAGE_SHIFT;
}

/* Lays the heap out on [start, end); false if no page fits. */
static bool heap_layout(void *start, void *end)
{
	uintptr_t s = ((uintptr_t)start + PAGE - 1) & ~(uintptr_t)(PAGE - 1);
	uintptr_t e = (uintptr_t)end & ~(uintptr_t)(PAGE - 1);
	size_t total, ndesc;

	if (!start || e <= s)
		return false;
	total = (e - s) >> PAGE_SHIFT;
	/* One descriptor page covers itself plus 128 data pages. */
	ndesc = (total + PAGE / sizeof(struct hpage)) / (PAGE / sizeof(struct hpage) + 1);
	heap.desc = (struct hpage *)s;
	heap.base = (char *)s + (ndesc << PAGE_SHIFT);
	heap.npages = total - ndesc;
	if (heap.npages > UINT32_MAX)
		heap.npages = UINT32_MAX; /* run lengths are 32-bit */
	return true;
}

void cloak_heap_init(void *start, void *end)
{
	memset(&heap, 0, sizeof(heap));
	heap_layout(start, end);
}

void *cloak_heap_boot(void *start, void *end, size_t npages)
{
	if (!heap_layout(start, end) || npages == 0 || npages > heap.npages)
		return NULL;
	heap.brk = npages; /* run_alloc() on a fresh heap, without the search */
	mark_run(heap.desc, npages, KIND_LARGE);
	return heap.base;
}

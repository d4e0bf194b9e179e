/* SPDX-License-Identifier: ISC */
/*
 * Heap statistics and the invariant checker. Both walk every run below
 * brk, so they cost time in proportion to the heap: for tests and
 * debugging, not for hot paths. A guest that never calls them does not
 * link this file.
 */
#include <stdbool.h>

#include "heap_impl.h"

void cloak_heap_stats(struct cloak_heap_stats *st)
{
	struct hpage *d = heap.desc, *end = heap.desc + heap.brk;
	*st = (struct cloak_heap_stats){ .pages_total = heap.npages, .pages_touched = heap.brk };
	while (d < end) {
		switch (d->kind & KIND_MASK) {
		case KIND_SMALL:
			st->pages_small++;
			st->small_live += d->used;
			d++;
			break;
		case KIND_LARGE:
			st->pages_large += d->count;
			d += d->count;
			break;
		default: /* FREE; a broken heap is cloak_heap_check()'s business */
			st->pages_free += d->count ? d->count : 1;
			d += d->count ? d->count : 1;
			break;
		}
	}
}

static bool on_list(const struct hpage *head, const struct hpage *d)
{
	for (; head; head = head->next)
		if (head == d)
			return true;
	return false;
}

/* Checks one SMALL page: bump offset, live count and its free list. */
static int check_small(const struct hpage *d)
{
	size_t size, bumped, nfree = 0;
	const char *page = page_addr(d);
	const void *p;
	bool has_room;

	if (d->cls >= NCLASS)
		return -10;
	size = class_size[d->cls];
	if (d->count > PAGE || d->count % size)
		return -11;
	bumped = d->count / size;
	for (p = d->free; p; p = *(void *const *)p) {
		size_t off = (size_t)((const char *)p - page);
		if (off >= d->count || off % size)
			return -12; /* free-list entry outside the bumped blocks */
		if (++nfree > bumped)
			return -13; /* loop in the free list */
	}
	if (d->used + nfree != bumped)
		return -14;
	has_room = d->free || d->count + size <= PAGE;
	if (has_room != on_list(heap.avail[d->cls], d))
		return -15;
	return 0;
}

/*
 * Returns 0, or the first broken rule:
 *  -1 unknown kind   -2 run past brk   -3 head/tail disagree
 *  -4 adjacent free runs   -5 free run missing from free_runs
 *  -6 free_runs holds something else   -7 bad prev link
 *  -10..-15 a small page (class, bump offset, free list, count, listing)
 *  -16 a class list holds a page of another class or kind
 */
int cloak_heap_check(void)
{
	struct hpage *d = heap.desc, *end = heap.desc + heap.brk;
	bool prev_free = false;
	size_t free_runs = 0, listed = 0;
	const struct hpage *l, *prev;
	unsigned c;
	int r;

	if (heap.brk > heap.npages)
		return -2;
	while (d < end) {
		unsigned kind = d->kind & KIND_MASK;
		size_t n = 1;
		if (kind == KIND_SMALL) {
			if ((r = check_small(d)) != 0)
				return r;
		} else if (kind == KIND_LARGE || kind == KIND_FREE) {
			n = d->count;
			if (n == 0 || n > (size_t)(end - d))
				return -2;
			if (d[n - 1].kind != d->kind || d[n - 1].count != d->count)
				return -3;
			if (kind == KIND_FREE) {
				if (prev_free)
					return -4;
				if (!on_list(heap.free_runs, d))
					return -5;
				free_runs++;
			}
		} else {
			return -1;
		}
		prev_free = kind == KIND_FREE;
		d += n;
	}
	for (l = heap.free_runs, prev = NULL; l; prev = l, l = l->next) {
		if (l->kind != KIND_FREE || l < heap.desc || l >= end)
			return -6;
		if (l->prev != prev)
			return -7;
		listed++;
	}
	if (listed != free_runs)
		return -6;
	for (c = 0; c < NCLASS; c++) {
		for (l = heap.avail[c], prev = NULL; l; prev = l, l = l->next) {
			if ((l->kind & KIND_MASK) != KIND_SMALL || l->cls != c || l < heap.desc || l >= end)
				return -16;
			if (l->prev != prev)
				return -7;
		}
	}
	return 0;
}

/* SPDX-License-Identifier: ISC */
/* Page share bitmap; see sharemap.h. */
#include "sharemap.h"

#include <stdlib.h>

int sharemap_init(struct sharemap *m, uint64_t npages)
{
	m->npages = npages;
	m->nshared = 0;
	m->words = calloc((size_t)((npages + 63) / 64) + 1, sizeof(uint64_t));
	return m->words ? 0 : -1;
}

void sharemap_free(struct sharemap *m)
{
	free(m->words);
	m->words = NULL;
	m->npages = m->nshared = 0;
}

/* Mask of bits [lo, hi) within one word, 0 <= lo < hi <= 64. */
static uint64_t word_mask(unsigned lo, unsigned hi)
{
	uint64_t upper = hi == 64 ? ~0ull : (1ull << hi) - 1;
	return upper & ~((1ull << lo) - 1);
}

/* Steps through [*first, end) one bitmap word at a time: returns the word
 * index and the mask of the range's bits in it, and advances *first. */
static uint64_t next_word(uint64_t *first, uint64_t end, uint64_t *mask)
{
	uint64_t w = *first / 64;
	unsigned lo = (unsigned)(*first % 64);
	unsigned hi = end - w * 64 >= 64 ? 64 : (unsigned)(end - w * 64);
	*mask = word_mask(lo, hi);
	*first = w * 64 + hi;
	return w;
}

/* Applies set (or clear) to [first, first+count) and keeps nshared. */
static void update(struct sharemap *m, uint64_t first, uint64_t count, bool set)
{
	uint64_t end = first + count, mask;
	while (first < end) {
		uint64_t w = next_word(&first, end, &mask);
		uint64_t old = m->words[w];
		uint64_t neu = set ? old | mask : old & ~mask;
		m->nshared += (uint64_t)__builtin_popcountll(neu);
		m->nshared -= (uint64_t)__builtin_popcountll(old);
		m->words[w] = neu;
	}
}

void sharemap_set(struct sharemap *m, uint64_t first, uint64_t count)
{
	update(m, first, count, true);
}

void sharemap_clear(struct sharemap *m, uint64_t first, uint64_t count)
{
	update(m, first, count, false);
}

bool sharemap_all_set(const struct sharemap *m, uint64_t first, uint64_t count)
{
	uint64_t end = first + count, mask;
	while (first < end) {
		uint64_t w = next_word(&first, end, &mask);
		if ((m->words[w] & mask) != mask)
			return false;
	}
	return true;
}

uint64_t sharemap_next_set(const struct sharemap *m, uint64_t from)
{
	while (from < m->npages) {
		uint64_t w = from / 64;
		uint64_t bits = m->words[w] & ~((1ull << (from % 64)) - 1);
		if (bits) {
			uint64_t p = w * 64 + (uint64_t)__builtin_ctzll(bits);
			return p < m->npages ? p : m->npages;
		}
		from = (w + 1) * 64;
	}
	return m->npages;
}

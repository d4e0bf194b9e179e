/* SPDX-License-Identifier: ISC */
/*
 * Host tests of the guest heap (runtime/libc/malloc.c), compiled for the
 * host with malloc & co. renamed to rt_NAME. Each test hands the heap a
 * fresh zero-filled mapping, as the monitor hands a guest zeroed RAM, and
 * checks the heap's own invariants (cloak_heap_check) besides the results.
 */
#include "rt_libc_test.h"

#include <sys/mman.h>
#include <unistd.h>

static char *area;
static size_t area_len;

/* free()/realloc() of a bad pointer ends in __cloak_assert_fail; a test
 * that expects that arms `abort_jmp`. */
static jmp_buf abort_jmp;
static bool abort_armed;

_Noreturn void rt_cloak_assert_fail(const char *expr, const char *file, int line)
{
	if (abort_armed) {
		abort_armed = false;
		longjmp(abort_jmp, 1);
	}
	fail_msg("runtime assertion: %s (%s:%d)", expr, file, line);
	abort();
}

#define EXPECT_ABORT(stmt)                                                  \
	do {                                                                \
		if (setjmp(abort_jmp) == 0) {                               \
			abort_armed = true;                                 \
			stmt;                                               \
			abort_armed = false;                                \
			fail_msg("no abort from: %s", #stmt);               \
		}                                                           \
	} while (0)

static void heap_on(size_t len)
{
	area = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(area != MAP_FAILED);
	/* Small pages only, so that residency (mincore) shows what was touched. */
	madvise(area, len, MADV_NOHUGEPAGE);
	area_len = len;
	cloak_heap_init(area, area + len);
}

static int setup_8m(void **state)
{
	(void)state;
	heap_on(8 << 20);
	return 0;
}

static int setup_1m(void **state)
{
	(void)state;
	heap_on(1 << 20);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	munmap(area, area_len);
	area = NULL;
	return 0;
}

static struct cloak_heap_stats stats(void)
{
	struct cloak_heap_stats st;
	cloak_heap_stats(&st);
	return st;
}

static void assert_heap_ok(void)
{
	assert_int_equal(cloak_heap_check(), 0);
}

/* Every live block gets a pattern from its seed; overlap or stray writes
 * show up as a mismatch. */
static void fill(void *p, size_t n, uint64_t seed)
{
	unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)((seed * 0x9e3779b97f4a7c15ull + i * 131) >> 7);
}

static void verify(const void *p, size_t n, uint64_t seed)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		if (b[i] != (unsigned char)((seed * 0x9e3779b97f4a7c15ull + i * 131) >> 7))
			fail_msg("block %p (%zu bytes, seed %llu): byte %zu changed", p, n,
				 (unsigned long long)seed, i);
}

static bool in_area(const void *p, size_t n)
{
	return (const char *)p >= area && (const char *)p + n <= area + area_len;
}

static const size_t classes[] = { 16,  32,  48,  64,  80,  96,  112, 128,  160,  192,  224,  256,
				  320, 384, 448, 512, 640, 768, 896, 1024, 1280, 1536, 1792, 2048 };

/* Every size to 2048 and a spread of larger ones: 16-byte aligned, inside
 * the heap, and served by the smallest class that fits (whole pages above
 * 2048), all live at once. */
static void test_sizes_and_alignment(void **state)
{
	static void *blocks[4096];
	static size_t sizes[4096];
	size_t k = 0;
	(void)state;
	for (size_t size = 0; size <= 40000; size += size < 2048 ? 1 : 211) {
		size_t usable, want = 0;
		void *p = rt_malloc(size);
		assert_non_null(p);
		assert_true(((uintptr_t)p & 15) == 0);
		usable = cloak_heap_usable_size(p);
		assert_true(in_area(p, usable));
		if (size <= 2048) {
			for (size_t c = 0; c < sizeof(classes) / sizeof(classes[0]) && !want; c++)
				if (classes[c] >= size)
					want = classes[c];
		} else {
			want = (size + 4095) & ~(size_t)4095;
			assert_true(((uintptr_t)p & 4095) == 0);
		}
		assert_int_equal(usable, want);
		fill(p, size, size);
		assert_true(k < 4096);
		blocks[k] = p;
		sizes[k++] = size;
	}
	for (size_t i = 0; i < k; i++) {
		verify(blocks[i], sizes[i], sizes[i]);
		rt_free(blocks[i]);
	}
	assert_heap_ok();
	assert_int_equal(stats().small_live, 0);
	assert_int_equal(stats().pages_large, 0);
	rt_free(NULL);
}

static int by_addr(const void *a, const void *b)
{
	const uintptr_t *x = a, *y = b;
	return (x[0] > y[0]) - (x[0] < y[0]);
}

static size_t random_size(void)
{
	switch (rng_below(20)) {
	case 0: return 2049 + rng_below(30000);
	case 1: case 2: case 3: return rng_below(2049);
	default: return rng_below(257);
	}
}

/* Thousands of live blocks: pairwise disjoint and each keeps its bytes. */
static void test_no_overlap(void **state)
{
	enum { N = 4000 };
	static void *p[N];
	static size_t n[N];
	static uintptr_t ranges[N][2];
	(void)state;
	rng_seed(10);
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < N; i++) {
			if (p[i])
				continue;
			n[i] = random_size();
			p[i] = rt_malloc(n[i]);
			assert_non_null(p[i]);
			fill(p[i], n[i], (uint64_t)i + 1000u * (uint64_t)round);
		}
		for (int i = 0; i < N; i++) {
			ranges[i][0] = (uintptr_t)p[i];
			ranges[i][1] = (uintptr_t)p[i] + (n[i] ? n[i] : 1);
		}
		qsort(ranges, N, sizeof(ranges[0]), by_addr);
		for (int i = 1; i < N; i++)
			assert_true(ranges[i - 1][1] <= ranges[i][0]);
		assert_heap_ok();
		/* Free about half, re-fill the gaps next round with new seeds. */
		for (int i = 0; i < N; i++) {
			verify(p[i], n[i], (uint64_t)i + 1000u * (uint64_t)round);
			if (rng_below(2)) {
				rt_free(p[i]);
				p[i] = NULL;
			} else {
				fill(p[i], n[i], (uint64_t)i + 1000u * (uint64_t)(round + 1));
			}
		}
	}
	for (int i = 0; i < N; i++)
		rt_free(p[i]);
	assert_heap_ok();
	assert_int_equal(stats().small_live, 0);
}

static void test_heap_realloc(void **state)
{
	static const size_t steps[] = { 1, 15, 16, 17, 100, 128, 129, 600, 2048, 2049, 4096, 5000,
					12288, 70000, 3000, 2000, 700, 64, 8, 1, 40000 };
	size_t cur = 0;
	char *p = NULL;
	(void)state;

	/* A chain of resizes up and down keeps the common prefix. */
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		char *q = rt_realloc(p, steps[i]);
		assert_non_null(q);
		if (p)
			verify(q, cur < steps[i] ? cur : steps[i], 77);
		else
			assert_int_equal(cur, 0);
		fill(q, steps[i], 77);
		p = q;
		cur = steps[i];
		assert_heap_ok();
	}
	/* realloc(p, 0) frees. */
	assert_null(rt_realloc(p, 0));
	assert_int_equal(stats().pages_large, 0);
	assert_int_equal(stats().small_live, 0);

	/* A small shrink stays in place; a big one moves to a smaller class. */
	p = rt_malloc(100);
	fill(p, 100, 5);
	assert_ptr_equal(rt_realloc(p, 90), p);
	{
		char *q = rt_realloc(p, 20);
		assert_non_null(q);
		assert_true(q != p);
		assert_int_equal(cloak_heap_usable_size(q), 32);
		verify(q, 20, 5);
		rt_free(q);
	}
	assert_heap_ok();
}

/* Large blocks grow in place into free or untouched pages behind them and
 * shrink in place, giving the tail back. */
static void test_realloc_large_in_place(void **state)
{
	char *a, *b, *c;
	size_t free_before;
	(void)state;

	a = rt_malloc(3 * 4096);
	fill(a, 3 * 4096, 1);
	/* Nothing behind a: it grows into untouched pages. */
	assert_ptr_equal(rt_realloc(a, 10 * 4096), a);
	assert_int_equal(cloak_heap_usable_size(a), 10 * 4096);
	verify(a, 3 * 4096, 1);
	b = rt_malloc(2 * 4096);
	c = rt_malloc(4096);
	rt_free(b);
	/* b's two pages are free behind a: it grows into them. */
	assert_ptr_equal(rt_realloc(a, 12 * 4096), a);
	assert_true(c == a + 12 * 4096);
	/* No room behind a now (c): it has to move, and keeps its bytes. */
	b = rt_realloc(a, 13 * 4096);
	assert_true(b != a);
	verify(b, 3 * 4096, 1);
	assert_heap_ok();

	/* Shrinking gives pages back at once. */
	free_before = stats().pages_free;
	assert_ptr_equal(rt_realloc(b, 2 * 4096 + 1), b);
	assert_int_equal(cloak_heap_usable_size(b), 3 * 4096);
	assert_true(stats().pages_free >= free_before + 10);
	verify(b, 3 * 4096, 1);
	assert_heap_ok();

	/* A failed realloc leaves the block alone. */
	rt_errno = 0;
	assert_null(rt_realloc(b, area_len));
	assert_int_equal(rt_errno, ENOMEM);
	assert_null(rt_realloc(b, SIZE_MAX));
	verify(b, 3 * 4096, 1);
	rt_free(b);
	rt_free(c);
	assert_heap_ok();
	assert_int_equal(stats().pages_large, 0);
}

static bool all_zero(const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

static size_t resident_pages(const void *p, size_t n)
{
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)p & ~(uintptr_t)(pg - 1);
	size_t len = (uintptr_t)p + n - start, count = 0;
	unsigned char vec[1024];
	assert_true(len / (size_t)pg <= sizeof(vec));
	assert_int_equal(mincore((void *)start, len, vec), 0);
	for (size_t i = 0; i < (len + (size_t)pg - 1) / (size_t)pg; i++)
		count += vec[i] & 1;
	return count;
}

static void test_heap_calloc(void **state)
{
	static const size_t sizes[] = { 1, 24, 100, 2048, 3000, 40000 };
	char *p;
	(void)state;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		/* Used memory comes back zeroed ... */
		p = rt_malloc(sizes[i]);
		memset(p, 0xaa, sizes[i]);
		rt_free(p);
		p = rt_calloc(1, sizes[i]);
		assert_non_null(p);
		assert_true(all_zero(p, sizes[i]));
		memset(p, 0xbb, sizes[i]);
		rt_free(p);
		p = rt_calloc(sizes[i], 1);
		assert_true(all_zero(p, sizes[i]));
		rt_free(p);
	}
	/* ... and fresh memory is not written at all: its pages stay
	 * untouched (the monitor's RAM is zero already, and touching a page
	 * costs a guest several microseconds). */
	p = rt_calloc(64, 4096);
	assert_non_null(p);
	assert_int_equal(resident_pages(p, 64 * 4096), 0);
	assert_true(all_zero(p, 64 * 4096));
	rt_free(p);

	/* nmemb * size overflowing size_t. */
	rt_errno = 0;
	assert_null(rt_calloc(SIZE_MAX / 2, 3));
	assert_int_equal(rt_errno, ENOMEM);
	assert_null(rt_calloc((size_t)1 << 32, (size_t)1 << 32));
	p = rt_calloc(0, 100);
	assert_non_null(p);
	rt_free(p);
	assert_heap_ok();
}

/* Running out returns NULL with ENOMEM; freeing makes room again, for
 * any size (empty small pages go back to the page pool). */
static void test_exhaustion(void **state)
{
	enum { MAX = 100000 };
	static void *p[MAX];
	size_t n, again;
	struct cloak_heap_stats st;
	(void)state;

	assert_null(rt_malloc(SIZE_MAX));
	assert_null(rt_malloc(area_len));
	for (n = 0; n < MAX && (p[n] = rt_malloc(5000)) != NULL; n++)
		;
	assert_true(n > 100 && n < MAX);
	rt_errno = 0;
	assert_null(rt_malloc(5000));
	assert_int_equal(rt_errno, ENOMEM);
	for (size_t i = 0; i < n; i++)
		rt_free(p[i]);
	assert_heap_ok();
	for (again = 0; again < MAX && (p[again] = rt_malloc(5000)) != NULL; again++)
		;
	assert_int_equal(again, n);
	for (size_t i = 0; i < again; i++)
		rt_free(p[i]);

	/* Small blocks until full, then free: every page but one comes back
	 * (the first one emptied, page 0, while it was alone on its class
	 * list), so the rest is one run again. */
	for (n = 0; n < MAX && (p[n] = rt_malloc(64)) != NULL; n++)
		;
	assert_true(n > 1000 && n < MAX);
	assert_null(rt_malloc(16));
	for (size_t i = 0; i < n; i++)
		rt_free(p[i]);
	assert_heap_ok();
	st = stats();
	assert_int_equal(st.small_live, 0);
	assert_int_equal(st.pages_small, 1); /* one empty page kept per class */
	p[0] = rt_malloc((st.pages_total - 1) * 4096);
	assert_non_null(p[0]);
	rt_free(p[0]);
	assert_heap_ok();
}

/* A malloc/free loop reuses one page instead of taking and returning it. */
static void test_no_page_churn(void **state)
{
	(void)state;
	for (int i = 0; i < 10000; i++)
		rt_free(rt_malloc(32));
	assert_int_equal(stats().pages_touched, 1);
	assert_int_equal(stats().pages_small, 1);
}

static void test_aligned_alloc(void **state)
{
	void *p[64];
	int k = 0;
	(void)state;
	rng_seed(11);
	for (size_t align = 1; align <= (1 << 20); align <<= 1) {
		for (int rep = 0; rep < 3; rep++) {
			size_t size = rep == 0 ? 1 : random_size();
			p[k] = rt_aligned_alloc(align, size);
			assert_non_null(p[k]);
			assert_true(((uintptr_t)p[k] & (align - 1)) == 0);
			assert_true(((uintptr_t)p[k] & 15) == 0);
			assert_true(cloak_heap_usable_size(p[k]) >= size);
			fill(p[k], size, (uint64_t)k);
			k++;
		}
	}
	assert_heap_ok();
	while (k--)
		rt_free(p[k]);
	assert_heap_ok();
	assert_int_equal(stats().pages_large, 0);

	rt_errno = 0;
	assert_null(rt_aligned_alloc(24, 10));
	assert_int_equal(rt_errno, EINVAL);
	assert_null(rt_aligned_alloc(0, 10));
	assert_int_equal(rt_posix_memalign(&p[0], 3, 10), EINVAL);
	assert_int_equal(rt_posix_memalign(&p[0], 4, 10), EINVAL);
	assert_int_equal(rt_posix_memalign(&p[0], 256, 100), 0);
	assert_true(((uintptr_t)p[0] & 255) == 0);
	rt_free(p[0]);
	assert_int_equal(rt_posix_memalign(&p[0], 8, area_len), ENOMEM);
}

static void test_alloc_pages(void **state)
{
	char *a, *b, *c;
	(void)state;
	assert_null(cloak_heap_alloc_pages(0));
	assert_null(cloak_heap_alloc_pages(area_len / 4096));
	a = cloak_heap_alloc_pages(1);
	b = cloak_heap_alloc_pages(5);
	c = cloak_heap_alloc_pages(2);
	assert_true(((uintptr_t)a & 4095) == 0 && ((uintptr_t)b & 4095) == 0);
	assert_int_equal(cloak_heap_usable_size(b), 5 * 4096);
	fill(b, 5 * 4096, 9);
	assert_true(b >= a + 4096 && c >= b + 5 * 4096);
	/* Freed neighbours coalesce into one run that a bigger request fits. */
	rt_free(a);
	rt_free(b);
	assert_heap_ok();
	assert_ptr_equal(cloak_heap_alloc_pages(6), a);
	rt_free(a);
	rt_free(c);
	assert_heap_ok();
	assert_int_equal(stats().pages_large, 0);
}

/* Pointers that cannot be live blocks end the guest instead of corrupting
 * the heap. */
static void test_bad_free(void **state)
{
	int on_stack;
	char *small = rt_malloc(48), *large = rt_malloc(3 * 4096), *other = rt_malloc(48);
	(void)state;
	EXPECT_ABORT(rt_free(&on_stack));
	EXPECT_ABORT(rt_free(small + 16));
	EXPECT_ABORT(rt_free(small + 4096 * 2));
	EXPECT_ABORT(rt_free(large + 4096));
	EXPECT_ABORT(rt_free(large + 8));
	EXPECT_ABORT(rt_realloc(small + 1, 10));
	EXPECT_ABORT(cloak_heap_usable_size(small + 4));
	EXPECT_ABORT(rt_free(area + area_len - 4096)); /* never handed out */
	rt_free(large);
	EXPECT_ABORT(rt_free(large)); /* double free of a large block */
	rt_free(small);
	rt_free(other);
	EXPECT_ABORT(rt_free(small)); /* double free, page now empty */
	assert_heap_ok();
}

/* The heap before cloak_heap_init, and on ranges too small or unaligned. */
static void test_init_edges(void **state)
{
	char *p;
	(void)state;
	cloak_heap_init(NULL, NULL);
	assert_null(rt_malloc(1));
	cloak_heap_init(area + 100, area + 4000);
	assert_null(rt_malloc(1));
	cloak_heap_init(area + 1, area + 3 * 4096 - 1); /* one whole page inside */
	assert_null(rt_malloc(1)); /* ... and that one holds the descriptors */
	cloak_heap_init(area + 1, area + 64 * 4096 - 1);
	p = rt_malloc(4096 * 10);
	assert_non_null(p);
	assert_true(p >= area + 4096 && p + 4096 * 10 <= area + 63 * 4096);
	assert_int_equal(stats().pages_total, 61); /* 62 pages, one for descriptors */
	rt_free(p);
	assert_heap_ok();
}

/* The start-up path: the first pages as one whole-page allocation on a
 * heap whose state is still zero, which nothing allocated later overlaps. */
static void test_boot_pool(void **state)
{
	enum { POOL = 3 };
	static void *got[1024];
	size_t n = 0;
	(void)state;
	cloak_heap_init(NULL, NULL); /* the state zero, as .bss at boot */
	assert_null(cloak_heap_boot(area, area + area_len, 0));
	assert_null(cloak_heap_boot(area, area + area_len, area_len / 4096));
	cloak_heap_init(NULL, NULL);
	char *pool = cloak_heap_boot(area + 1, area + area_len, POOL);
	assert_non_null(pool);
	assert_true(pool >= area + 4096 && ((uintptr_t)pool & 4095) == 0);
	assert_int_equal(cloak_heap_usable_size(pool), POOL * 4096);
	assert_heap_ok();
	for (size_t size = 16; n < 1024; size = size * 3 % 9000 + 16) {
		char *q = rt_malloc(size);
		if (!q)
			break;
		assert_true(q + size <= pool || q >= pool + POOL * 4096);
		got[n++] = q;
	}
	assert_true(n > 100);
	assert_heap_ok();
	while (n)
		rt_free(got[--n]);
	assert_int_equal(cloak_heap_usable_size(pool), POOL * 4096);
	assert_heap_ok();
}

/* Random malloc/calloc/realloc/aligned_alloc/free with contents checked
 * throughout and the heap's invariants checked every few thousand steps. */
static void test_stress(void **state)
{
	enum { SLOTS = 512, OPS = 300000 };
	static void *p[SLOTS];
	static size_t n[SLOTS];
	static uint64_t seed[SLOTS];
	uint64_t next_seed = 1;
	size_t refused = 0;
	struct cloak_heap_stats st;
	(void)state;

	memset(p, 0, sizeof(p)); /* the test runs twice */
	rng_seed(12);
	for (int op = 0; op < OPS; op++) {
		int i = (int)rng_below(SLOTS);
		size_t size = random_size();
		if (p[i]) {
			verify(p[i], n[i], seed[i]);
			if (rng_below(3) == 0) {
				void *q = rt_realloc(p[i], size);
				if (!q && size) {
					refused++;
					continue; /* heap full: p[i] is intact */
				}
				p[i] = q;
				if (q)
					verify(q, n[i] < size ? n[i] : size, seed[i]);
			} else {
				rt_free(p[i]);
				p[i] = NULL;
				continue;
			}
		} else {
			switch (rng_below(4)) {
			case 0:
				p[i] = rt_calloc(1, size);
				if (p[i])
					assert_true(all_zero(p[i], size));
				break;
			case 1:
				p[i] = rt_aligned_alloc((size_t)1 << rng_below(14), size);
				break;
			default:
				p[i] = rt_malloc(size);
				break;
			}
			if (!p[i]) {
				refused++;
				continue;
			}
		}
		assert_true(((uintptr_t)p[i] & 15) == 0);
		n[i] = size;
		seed[i] = next_seed++;
		if (p[i])
			fill(p[i], size, seed[i]);
		if (op % 5000 == 0)
			assert_heap_ok();
	}
	for (int i = 0; i < SLOTS; i++) {
		if (p[i])
			verify(p[i], n[i], seed[i]);
		rt_free(p[i]);
	}
	assert_heap_ok();
	st = stats();
	assert_int_equal(st.small_live, 0);
	assert_int_equal(st.pages_large, 0);
	assert_true(st.pages_small <= sizeof(classes) / sizeof(classes[0]));
	assert_int_equal(st.pages_free + st.pages_small, st.pages_touched);
	/* The small heap must have run full, or its run proves nothing new. */
	print_message("# %zu of %d requests refused for lack of memory\n", refused, OPS);
	if (area_len <= (1 << 20))
		assert_true(refused > 100);
}

#define HEAP_TEST(fn, setup) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		HEAP_TEST(test_sizes_and_alignment, setup_8m),
		HEAP_TEST(test_no_overlap, setup_8m),
		HEAP_TEST(test_heap_realloc, setup_8m),
		HEAP_TEST(test_realloc_large_in_place, setup_1m),
		HEAP_TEST(test_heap_calloc, setup_8m),
		HEAP_TEST(test_exhaustion, setup_1m),
		HEAP_TEST(test_no_page_churn, setup_1m),
		HEAP_TEST(test_aligned_alloc, setup_8m),
		HEAP_TEST(test_alloc_pages, setup_1m),
		HEAP_TEST(test_bad_free, setup_1m),
		HEAP_TEST(test_init_edges, setup_1m),
		HEAP_TEST(test_boot_pool, setup_1m),
		HEAP_TEST(test_stress, setup_8m),
		HEAP_TEST(test_stress, setup_1m), /* the same, often out of memory */
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

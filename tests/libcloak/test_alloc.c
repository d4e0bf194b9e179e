/*
 * libcloak allocation semantics: the size-class table, every size from 0 to
 * 1 MiB, alignment, zeroed memory, realloc, calloc overflow, guarded
 * allocations and protection changes, info and statistics.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <cloak/secret.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "child.h"
#include "internal.h"

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(seed * 131 + i * 7 + 1);
}

static void check_fill(const unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)(seed * 131 + i * 7 + 1))
			fail_msg("byte %zu of a %zu-byte secret changed", i, n);
}

static bool all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static void class_table(void **state)
{
	unsigned n = pool_class_count();
	assert_true(n > 8);
	assert_int_equal(pool_class_usable(n - 1), 64 * 1024);
	for (unsigned c = 0; c < n; c++) {
		size_t u = pool_class_usable(c);
		assert_int_equal(u % 16, 0);
		assert_int_equal(pool_class_of(u), c);
		if (c + 1 < n)
			assert_int_equal(pool_class_of(u + 1), c + 1);
	}
	/* Every size fits its class, and wastes at most a quarter (or 16 bytes). */
	for (size_t s = 0; s <= 64 * 1024; s++) {
		size_t u = pool_class_usable(pool_class_of(s));
		assert_true(u >= s);
		assert_true(u - s <= 16 || u - s <= s / 4);
	}
}

/* Every size up to 4 KiB, then steps and powers of two ±1 up to 1 MiB; a
 * window of live secrets checks that no allocation overlaps another. */
static void sizes_up_to_1mib(void **state)
{
	enum { WINDOW = 64 };
	unsigned char *live[WINDOW] = { 0 };
	size_t sizes[WINDOW] = { 0 };
	unsigned count = 0;
	for (size_t s = 0; s <= (1u << 20); ) {
		unsigned char *p = cloak_secret_alloc(s);
		assert_non_null(p);
		assert_int_equal((uintptr_t)p % 16, 0);
		assert_int_equal(cloak_secret_usable_size(p), s);
		assert_true(all_zero(p, s));
		fill(p, s, count);
		unsigned slot = count % WINDOW;
		if (live[slot]) {
			check_fill(live[slot], sizes[slot], count - WINDOW);
			cloak_secret_free(live[slot]);
		}
		live[slot] = p, sizes[slot] = s;
		count++;
		if (s < 4096)
			s++;
		else if (s < 80 * 1024)
			s += 509;
		else
			s = s * 3 / 2;
		if (s > (1u << 20) && s < (1u << 20) + (1u << 19))
			s = 1u << 20;
	}
	for (unsigned i = 0; i < WINDOW; i++)
		cloak_secret_free(live[i]);
	for (unsigned k = 4; k <= 20; k++)
		for (int d = -1; d <= 1; d++) {
			size_t s = ((size_t)1 << k) + (size_t)d;
			unsigned char *p = cloak_secret_alloc(s);
			assert_non_null(p);
			assert_int_equal((uintptr_t)p % 16, 0);
			fill(p, s, k);
			check_fill(p, s, k);
			cloak_secret_free(p);
		}
}

static void memory_is_zeroed_on_free(void **state)
{
	unsigned char *p = cloak_secret_alloc(32);
	assert_non_null(p);
	memset(p, 0xa5, 32);
	cloak_secret_free(p);
	/* The thread cache is last-in first-out: the same slot comes back. */
	unsigned char *q = cloak_secret_alloc(32);
	assert_ptr_equal(p, q);
	assert_true(all_zero(q, 32));
	cloak_secret_free(q);
}

static void realloc_keeps_contents(void **state)
{
	unsigned char *p = cloak_secret_realloc(NULL, 10);
	assert_non_null(p);
	fill(p, 10, 3);
	/* Within the slot: resized in place. */
	unsigned char *q = cloak_secret_realloc(p, 15);
	assert_ptr_equal(p, q);
	assert_int_equal(cloak_secret_usable_size(q), 15);
	check_fill(q, 10, 3);
	assert_int_equal(q[10] | q[11] | q[12] | q[13] | q[14], 0);
	size_t size = 15;
	fill(q, size, 4);
	for (size_t next = 100; next <= (1u << 20); next *= 3) {
		q = cloak_secret_realloc(q, next);
		assert_non_null(q);
		check_fill(q, size, 4);
		assert_true(all_zero(q + size, next - size));
		fill(q, next, 4);
		size = next;
	}
	q = cloak_secret_realloc(q, 7); /* shrink from a large mapping into the pool */
	assert_non_null(q);
	check_fill(q, 7, 4);
	assert_int_equal(cloak_secret_usable_size(q), 7);
	q = cloak_secret_realloc(q, 0);
	assert_non_null(q);
	assert_int_equal(cloak_secret_usable_size(q), 0);
	cloak_secret_free(q);
}

static void calloc_checks_overflow(void **state)
{
	errno = 0;
	assert_null(cloak_secret_calloc(SIZE_MAX / 2 + 1, 2));
	assert_int_equal(errno, ENOMEM);
	assert_non_null(strstr(cloak_secret_last_error(), "overflow"));
	assert_null(cloak_secret_calloc(2, SIZE_MAX / 2 + 1));
	unsigned char *p = cloak_secret_calloc(1000, 50);
	assert_non_null(p);
	assert_true(all_zero(p, 50000));
	cloak_secret_free(p);
	p = cloak_secret_calloc(0, 0);
	assert_non_null(p);
	cloak_secret_free(p);
	errno = 0;
	assert_null(cloak_secret_alloc(SIZE_MAX - 1));
	assert_int_equal(errno, ENOMEM);
	cloak_secret_free(NULL);
	assert_int_equal(cloak_secret_usable_size(NULL), 0);
}

static void guarded_allocations(void **state)
{
	for (size_t s = 0; s < 10000; s += 997) {
		unsigned char *p = cloak_secret_alloc_guarded(s);
		assert_non_null(p);
		assert_int_equal(((uintptr_t)p + s) % 4096, 0); /* ends at a page end */
		assert_true(all_zero(p, s));
		fill(p, s, 9);
		assert_int_equal(cloak_secret_protect(p, CLOAK_NOACCESS), 0);
		assert_int_equal(cloak_secret_protect(p, CLOAK_READONLY), 0);
		check_fill(p, s, 9);
		assert_int_equal(cloak_secret_protect(p, CLOAK_READWRITE), 0);
		check_fill(p, s, 9);
		assert_int_equal(cloak_secret_usable_size(p), s);
		assert_int_equal(cloak_secret_protect(p, CLOAK_NOACCESS), 0);
		cloak_secret_free(p); /* in any protection state */
	}
	void *pooled = cloak_secret_alloc(64);
	errno = 0;
	assert_int_equal(cloak_secret_protect(pooled, CLOAK_READONLY), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(cloak_secret_protect(pooled, 7), -1);
	cloak_secret_free(pooled);
	/* Large requests get a guarded mapping too, but stay 16-aligned. */
	unsigned char *big = cloak_secret_alloc(100001);
	assert_non_null(big);
	assert_int_equal((uintptr_t)big % 16, 0);
	assert_int_equal(cloak_secret_protect(big, CLOAK_READONLY), 0);
	assert_int_equal(cloak_secret_protect(big, CLOAK_READWRITE), 0);
	cloak_secret_free(big);
}

static void info_reports_secretmem(void **state)
{
	struct cloak_secret_info info;
	assert_int_equal(cloak_secret_info(&info), 0);
	assert_int_equal(info.backend, CLOAK_BACKEND_SECRETMEM);
	assert_string_equal(cloak_secret_backend_name(info.backend), "memfd_secret");
	unsigned want = CLOAK_PROT_NO_DIRECT_MAP | CLOAK_PROT_LOCKED | CLOAK_PROT_NO_DUMP |
	                CLOAK_PROT_NO_FORK | CLOAK_PROT_NO_PEEK | CLOAK_PROT_CANARIES |
	                CLOAK_PROT_ZERO_ON_FREE;
	assert_int_equal(info.protections & want, want);
	assert_int_equal(info.protections & CLOAK_PROT_GUARD_ALL, 0);
	assert_int_equal(info.arena_size, 2 << 20);
	assert_int_equal(info.pooled_max, 64 << 10);
	assert_int_equal(cloak_secret_info(NULL), -1);
}

static void stats_follow_allocations(void **state)
{
	struct cloak_secret_stats a, b, c;
	cloak_secret_stats(&a);
	void *p[100];
	for (int i = 0; i < 100; i++)
		p[i] = cloak_secret_alloc(32);
	void *g = cloak_secret_alloc_guarded(10);
	cloak_secret_stats(&b);
	assert_int_equal(b.secrets_in_use, a.secrets_in_use + 101);
	assert_int_equal(b.bytes_in_use, a.bytes_in_use + 3210);
	assert_int_equal(b.allocs, a.allocs + 101);
	assert_int_equal(b.mapped_allocs, a.mapped_allocs + 1);
	assert_true(b.arenas >= 1);
	assert_true(b.locked_bytes >= b.arenas * (2u << 20) + 4096);
	assert_true(b.mappings >= b.arenas + 3);
	for (int i = 0; i < 100; i++)
		cloak_secret_free(p[i]);
	cloak_secret_free(g);
	cloak_secret_stats(&c);
	assert_int_equal(c.secrets_in_use, a.secrets_in_use);
	assert_int_equal(c.bytes_in_use, a.bytes_in_use);
	assert_int_equal(c.frees, a.frees + 101);
}

int main(int argc, char **argv)
{
	require_secretmem_or_skip_all();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(class_table),
		cmocka_unit_test(sizes_up_to_1mib),
		cmocka_unit_test(memory_is_zeroed_on_free),
		cmocka_unit_test(realloc_keeps_contents),
		cmocka_unit_test(calloc_checks_overflow),
		cmocka_unit_test(guarded_allocations),
		cmocka_unit_test(info_reports_secretmem),
		cmocka_unit_test(stats_follow_allocations),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: ISC */
/*
 * libcloak allocation semantics: the size-class table, every size from 0 to
 * 1 MiB, alignment, zeroed memory, realloc, calloc overflow, guarded
 * allocations and protection changes, reuse of large mappings, memory given
 * back (empty arenas, and everything within a bound once no secret is live,
 * so that hibernation is possible), info and statistics.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <cloak/secret.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "child.h"
#include "idle.h"
#include "pool.h"

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
 * window of live secrets (up to 64 of them and 3 MiB, so that it fits the
 * stock 8 MiB lock limit) checks that no allocation overlaps another. */
static void sizes_up_to_1mib(void **state)
{
	REQUIRE_LOCKED_MEMORY(8ull << 20);
	enum { WINDOW = 64 };
	const size_t window_bytes = (size_t)3 << 20;
	unsigned char *live[WINDOW] = { 0 };
	size_t sizes[WINDOW] = { 0 }, live_bytes = 0;
	unsigned seeds[WINDOW] = { 0 };
	unsigned count = 0, oldest = 0, held = 0;
	for (size_t s = 0; s <= (1u << 20); ) {
		while (held == WINDOW || (held && live_bytes + s > window_bytes)) {
			unsigned i = oldest++ % WINDOW;
			check_fill(live[i], sizes[i], seeds[i]);
			cloak_secret_free(live[i]);
			live_bytes -= sizes[i];
			held--;
		}
		unsigned char *p = cloak_secret_alloc(s);
		assert_non_null(p);
		assert_int_equal((uintptr_t)p % 16, 0);
		assert_int_equal(cloak_secret_usable_size(p), s);
		assert_true(all_zero(p, s));
		fill(p, s, count);
		unsigned slot = (oldest + held) % WINDOW;
		live[slot] = p, sizes[slot] = s, seeds[slot] = count;
		live_bytes += s;
		held++;
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
	while (held) {
		unsigned i = oldest++ % WINDOW;
		check_fill(live[i], sizes[i], seeds[i]);
		cloak_secret_free(live[i]);
		held--;
	}
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
	/* A secret kept live keeps the arena (with none live it would go). */
	void *keep = cloak_secret_alloc(32);
	unsigned char *p = cloak_secret_alloc(32);
	assert_non_null(p);
	memset(p, 0xa5, 32);
	cloak_secret_free(p);
	/* A run's free list is last-in first-out: the same slot comes back. */
	unsigned char *q = cloak_secret_alloc(32);
	assert_ptr_equal(p, q);
	assert_true(all_zero(q, 32));
	/* Guarded mappings are kept for reuse, zeroed. */
	unsigned char *g = cloak_secret_alloc_guarded(5000);
	memset(g, 0xa5, 5000);
	cloak_secret_free(g);
	unsigned char *h = cloak_secret_alloc_guarded(5000);
	assert_ptr_equal(g, h);
	assert_true(all_zero(h, 5000));
	cloak_secret_free(h);
	cloak_secret_free(q);
	cloak_secret_free(keep);
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

/* The permissions of the mapping holding p in /proc/self/maps ("rw-s"). */
static void perms_at(const void *p, char out[5])
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	strcpy(out, "none");
	while (f && fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		char perms[5];
		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) == 3 && (uintptr_t)p >= lo &&
		    (uintptr_t)p < hi)
			memcpy(out, perms, 5);
	}
	if (f)
		fclose(f);
}

/* A guarded secret stays guarded across realloc and keeps its protection:
 * a NOACCESS one can be resized without being made readable first. */
static void realloc_keeps_guarded_secrets_guarded(void **state)
{
	char perms[5];
	unsigned char *p = cloak_secret_alloc_guarded(100);
	fill(p, 100, 5);
	assert_int_equal(cloak_secret_protect(p, CLOAK_SECRET_NOACCESS), 0);
	unsigned char *q = cloak_secret_realloc(p, 3000);
	assert_non_null(q);
	assert_int_equal(((uintptr_t)q + 3000) % 4096, 0); /* still ends at a page end */
	perms_at(q, perms);
	assert_string_equal(perms, "---s"); /* still inaccessible */
	assert_int_equal(cloak_secret_protect(q, CLOAK_SECRET_READONLY), 0);
	check_fill(q, 100, 5);
	assert_true(all_zero(q + 100, 2900));
	assert_int_equal(cloak_secret_protect(q, CLOAK_SECRET_NOACCESS), 0);
	q = cloak_secret_realloc(q, 10);
	assert_int_equal(((uintptr_t)q + 10) % 4096, 0);
	assert_int_equal(cloak_secret_protect(q, CLOAK_SECRET_READWRITE), 0);
	check_fill(q, 10, 5);
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
		assert_int_equal(cloak_secret_protect(p, CLOAK_SECRET_NOACCESS), 0);
		assert_int_equal(cloak_secret_protect(p, CLOAK_SECRET_READONLY), 0);
		check_fill(p, s, 9);
		assert_int_equal(cloak_secret_protect(p, CLOAK_SECRET_READWRITE), 0);
		check_fill(p, s, 9);
		assert_int_equal(cloak_secret_usable_size(p), s);
		assert_int_equal(cloak_secret_protect(p, CLOAK_SECRET_NOACCESS), 0);
		cloak_secret_free(p); /* in any protection state */
	}
	void *pooled = cloak_secret_alloc(64);
	errno = 0;
	assert_int_equal(cloak_secret_protect(pooled, CLOAK_SECRET_READONLY), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(cloak_secret_protect(pooled, 7), -1);
	cloak_secret_free(pooled);
	/* Large requests get a guarded mapping too, but stay 16-aligned. */
	unsigned char *big = cloak_secret_alloc(100001);
	assert_non_null(big);
	assert_int_equal((uintptr_t)big % 16, 0);
	assert_int_equal(cloak_secret_protect(big, CLOAK_SECRET_READONLY), 0);
	assert_int_equal(cloak_secret_protect(big, CLOAK_SECRET_READWRITE), 0);
	cloak_secret_free(big);
}

static void info_reports_secretmem(void **state)
{
	struct cloak_secret_info info;
	assert_int_equal(cloak_secret_info(&info), 0);
	assert_int_equal(info.backend, CLOAK_SECRET_BACKEND_SECRETMEM);
	assert_string_equal(cloak_secret_backend_name(info.backend), "memfd_secret");
	unsigned want = CLOAK_SECRET_PROT_NO_DIRECT_MAP | CLOAK_SECRET_PROT_LOCKED | CLOAK_SECRET_PROT_NO_DUMP |
	                CLOAK_SECRET_PROT_NO_FORK | CLOAK_SECRET_PROT_NO_PEEK | CLOAK_SECRET_PROT_CANARIES |
	                CLOAK_SECRET_PROT_ZERO_ON_FREE;
	assert_int_equal(info.protections & want, want);
	assert_int_equal(info.protections & CLOAK_SECRET_PROT_GUARD_ALL, 0);
	assert_true(info.arena_size >= 16 << 10 && info.arena_size <= 2 << 20);
	if (info.cap_ipc_lock || info.memlock_soft >= 8 << 20)
		assert_int_equal(info.arena_size, 2 << 20);
	assert_int_equal(info.pooled_max, 64 << 10);
	assert_int_equal(info.fork_mode, CLOAK_SECRET_FORK_DROP); /* libcloak.so's default */
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
	assert_true(b.locked_bytes >= b.arenas * (16u << 10) + 4096);
	assert_true(b.mappings >= b.arenas + 1);
	for (int i = 0; i < 100; i++)
		cloak_secret_free(p[i]);
	cloak_secret_free(g);
	cloak_secret_stats(&c);
	assert_int_equal(c.secrets_in_use, a.secrets_in_use);
	assert_int_equal(c.bytes_in_use, a.bytes_in_use);
	assert_int_equal(c.frees, a.frees + 101);
}

/* Lines of /proc/self/maps naming a memfd_secret file. */
static int secretmem_vmas(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	int n = 0;
	while (f && fgets(line, sizeof line, f))
		n += strstr(line, "/secretmem") != NULL;
	if (f)
		fclose(f);
	return n;
}

static double monotonic_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Linux refuses to hibernate while any memfd_secret file exists: once no
 * secret is live, libcloak keeps its memory (wiped) for IDLE_RELEASE_MS, so
 * that the next secret does not map fresh memory, and then holds none, and
 * cloak_secret_info says so. The helper thread that gives it back must do so
 * within the bound (plus a second for a loaded machine to schedule it). */
static void no_secretmem_file_once_nothing_is_live(void **state)
{
	struct cloak_secret_info info;
	struct cloak_secret_stats s;
	idle_release_now(); /* what earlier tests left */
	void *p = cloak_secret_alloc(32), *g = cloak_secret_alloc_guarded(10);
	void *big = cloak_secret_alloc(1 << 20);
	assert_int_equal(cloak_secret_info(&info), 0);
	assert_int_equal(info.blocks_hibernation, 1);
	assert_int_equal(info.secretmem_files, 3);
	assert_int_equal(secretmem_vmas(), 3);
	cloak_secret_free(big);
	cloak_secret_free(g); /* kept for reuse: p is still live */
	cloak_secret_info(&info);
	assert_int_equal(info.blocks_hibernation, 1);
	cloak_secret_stats(&s);
	assert_true(s.cached_mappings >= 1);
	uint64_t releases = s.releases;
	double freed = monotonic_ms();
	cloak_secret_free(p);
	/* Kept for now: the next secret reuses the same slot, zeroed. */
	cloak_secret_info(&info);
	assert_int_equal(info.blocks_hibernation, 1);
	unsigned char *q = cloak_secret_alloc(32);
	assert_ptr_equal(q, p);
	assert_true(all_zero(q, 32));
	freed = monotonic_ms();
	cloak_secret_free(q);
	int vmas;
	while ((vmas = secretmem_vmas()) > 0 && monotonic_ms() - freed < IDLE_RELEASE_MS + 1000)
		usleep(10000);
	double took = monotonic_ms() - freed;
	print_message("# memory given back %.0f ms after the last free (bound %d ms)\n", took,
	              IDLE_RELEASE_MS);
	assert_int_equal(vmas, 0);
	assert_true(took >= IDLE_RELEASE_MS * 0.9);
	cloak_secret_info(&info);
	assert_int_equal(info.blocks_hibernation, 0);
	assert_int_equal(info.secretmem_files, 0);
	cloak_secret_stats(&s);
	assert_int_equal(s.locked_bytes, 0);
	assert_int_equal(s.arenas, 0);
	assert_int_equal(s.cached_mappings, 0);
	assert_int_equal(s.releases, releases + 1);
	/* And the next secret works. */
	p = cloak_secret_alloc(32);
	assert_non_null(p);
	assert_true(all_zero(p, 32));
	cloak_secret_free(p);
}

/* A burst of small secrets, freed: the runs and arenas they took go back,
 * while one long-lived secret keeps the process from releasing everything. */
static void empty_arenas_go_back(void **state)
{
	REQUIRE_LOCKED_MEMORY(8ull << 20);
	enum { N = 50000 }; /* about 5 MiB */
	idle_release_now();
	void *keep = cloak_secret_alloc(32);
	struct cloak_secret_stats before, during, after;
	cloak_secret_stats(&before);
	void **p = calloc(N, sizeof *p);
	for (int i = 0; i < N; i++)
		assert_non_null(p[i] = cloak_secret_alloc(i % 2 ? 32 : 100));
	cloak_secret_stats(&during);
	assert_true(during.locked_bytes >= before.locked_bytes + N / 2 * (48 + 112));
	for (int i = 0; i < N; i++)
		cloak_secret_free(p[i]);
	free(p);
	cloak_secret_stats(&after);
	print_message("# locked: %llu KiB before, %llu KiB with %d secrets, %llu KiB after\n",
	              (unsigned long long)before.locked_bytes >> 10,
	              (unsigned long long)during.locked_bytes >> 10, N,
	              (unsigned long long)after.locked_bytes >> 10);
	/* What stays: the arenas holding the last run of each class used (kept
	 * for the next secret) and one spare arena, each at most 2 MiB. */
	assert_true(after.locked_bytes <= before.locked_bytes + (6u << 20));
	assert_true(after.locked_bytes < during.locked_bytes / 2);
	assert_true(after.arenas <= before.arenas + 3);
	cloak_secret_free(keep);
}

/* Large secrets reuse their mappings (a fresh one costs tens of microseconds
 * a page to fault in): the same mapping comes back, zeroed. */
static void large_mappings_are_reused(void **state)
{
	idle_release_now();
	void *keep = cloak_secret_alloc(32);
	unsigned char *a = cloak_secret_alloc(1 << 20);
	memset(a, 0x5c, 1 << 20);
	cloak_secret_free(a);
	struct cloak_secret_stats s;
	cloak_secret_stats(&s);
	assert_int_equal(s.cached_mappings, 1);
	unsigned char *b = cloak_secret_alloc(1000000); /* smaller: the same mapping fits */
	assert_non_null(b);
	assert_int_equal(((uintptr_t)b + 1000000 + 15) >> 12, ((uintptr_t)a + (1 << 20) + 15) >> 12);
	assert_true(all_zero(b, 1000000));
	cloak_secret_free(b);
	cloak_secret_free(keep);
}

/* Freed guarded secrets fill the reuse cache's count; a large mapping freed
 * after them still gets in (the oldest make room) and is reused. */
static void large_mapping_reused_after_guarded_frees(void **state)
{
	void *keep = cloak_secret_alloc(32);
	void *g[20];
	for (int i = 0; i < 20; i++)
		assert_non_null(g[i] = cloak_secret_alloc_guarded(32));
	for (int i = 0; i < 20; i++)
		cloak_secret_free(g[i]);
	unsigned char *a = cloak_secret_alloc(1 << 20);
	memset(a, 0x5c, 1 << 20);
	cloak_secret_free(a);
	unsigned char *b = cloak_secret_alloc(1 << 20);
	assert_ptr_equal(b, a);
	assert_true(all_zero(b, 1 << 20));
	cloak_secret_free(b);
	struct cloak_secret_stats s;
	cloak_secret_stats(&s);
	assert_true(s.cached_mappings <= 16);
	/* The guarded ones freed last are still there to be reused. */
	void *h = cloak_secret_alloc_guarded(32);
	assert_true(h == g[19] || h == g[18]);
	cloak_secret_free(h);
	cloak_secret_free(keep);
}

int main(int argc, char **argv)
{
	require_secretmem_or_skip_all();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(class_table),
		cmocka_unit_test(sizes_up_to_1mib),
		cmocka_unit_test(memory_is_zeroed_on_free),
		cmocka_unit_test(realloc_keeps_contents),
		cmocka_unit_test(realloc_keeps_guarded_secrets_guarded),
		cmocka_unit_test(calloc_checks_overflow),
		cmocka_unit_test(guarded_allocations),
		cmocka_unit_test(info_reports_secretmem),
		cmocka_unit_test(stats_follow_allocations),
		cmocka_unit_test(no_secretmem_file_once_nothing_is_live),
		cmocka_unit_test(empty_arenas_go_back),
		cmocka_unit_test(large_mappings_are_reused),
		cmocka_unit_test(large_mapping_reused_after_guarded_frees),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

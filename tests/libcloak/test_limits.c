/* SPDX-License-Identifier: ISC */
/*
 * Limits and policy: with RLIMIT_MEMLOCK exhausted (CAP_IPC_LOCK dropped, so
 * the limit applies to root) allocations fail with ENOMEM and a diagnostic
 * naming the limit, and never fall back to weaker memory; arenas shrink to
 * fit small limits (64 KiB serves hundreds of small secrets); memory freed
 * by one size class serves another; memory kept for reuse yields to new
 * secrets when the limit is reached; without
 * memfd_secret (simulated) nothing is handed out unless the fallback policy
 * was accepted by environment or API, and cloak_secret_info() says so.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <cloak/secret.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "child.h"

#define LIMIT (4ul << 20)

/* Prints "failed after N: <diagnostic>" and exits 0 if allocation stops with
 * ENOMEM before the locked memory exceeds the limit. */
static int exhaust_memlock(void)
{
	if (!limit_locked_memory(LIMIT)) {
		printf("cannot drop CAP_IPC_LOCK or set the limit\n");
		return 2;
	}
	struct cloak_secret_info before;
	cloak_secret_info(&before);
	unsigned long n = 0;
	for (;; n++) {
		errno = 0;
		if (!cloak_secret_alloc(32))
			break;
		if (n > 10ul * LIMIT / 32) {
			printf("no failure after %lu secrets\n", n);
			return 3;
		}
	}
	int err = errno;
	struct cloak_secret_stats s;
	cloak_secret_stats(&s);
	struct cloak_secret_info after;
	cloak_secret_info(&after);
	printf("failed after %lu (errno %d, %llu bytes locked, backend %s): %s\n", n, err,
	       (unsigned long long)s.locked_bytes, cloak_secret_backend_name(after.backend),
	       cloak_secret_last_error());
	if (err != ENOMEM || s.locked_bytes > LIMIT || n < 1000)
		return 4;
	/* Guarded allocations fail the same way; so does a second try. */
	errno = 0;
	if (cloak_secret_alloc_guarded(10) || errno != ENOMEM || cloak_secret_alloc(32))
		return 5;
	return after.backend == before.backend ? 0 : 6;
}

static int allocate_one(void)
{
	struct cloak_secret_info info;
	cloak_secret_info(&info);
	errno = 0;
	void *p = cloak_secret_alloc(32);
	printf("backend %s protections %#x policy %d ptr %s errno %d: %s\n",
	       cloak_secret_backend_name(info.backend), info.protections, info.policy,
	       p ? "ok" : "null", errno, cloak_secret_last_error());
	return p ? 0 : 1;
}

/* Accepting the fallback through the API instead of the environment; the
 * memory must then be locked and excluded from dumps and children. */
static int fallback_by_api(void)
{
	if (cloak_secret_alloc(32))
		return 2; /* refused before the policy allows it */
	cloak_secret_set_policy(CLOAK_SECRET_POLICY_ALLOW_MLOCK_FALLBACK);
	unsigned char *p = cloak_secret_alloc(32);
	if (!p)
		return 3;
	char line[512], want[64];
	snprintf(want, sizeof want, "%lx-", (unsigned long)p & ~((2ul << 20) - 1));
	FILE *f = fopen("/proc/self/smaps", "re");
	bool in = false, found = false;
	while (f && fgets(line, sizeof line, f)) {
		if (strchr(line, '-') && strchr(line, ' ') > strchr(line, '-'))
			in = !strncmp(line, want, strlen(want));
		if (in && !strncmp(line, "VmFlags:", 8)) {
			found = strstr(line, " lo") && strstr(line, " dd") && strstr(line, " dc");
			printf("%s", line);
		}
	}
	if (f)
		fclose(f);
	return found ? 0 : 4;
}

/* Allocates 32-byte secrets until the limit stops them; their count. */
static unsigned long fill_with_small(void **out, unsigned long max)
{
	unsigned long n = 0;
	while (n < max && (out[n] = cloak_secret_alloc(32)))
		n++;
	return n;
}

static int small_limit(void)
{
	if (!limit_locked_memory(64 << 10))
		return 2;
	static void *p[100000];
	unsigned long n = fill_with_small(p, 100000);
	struct cloak_secret_stats s;
	struct cloak_secret_info info;
	cloak_secret_stats(&s);
	cloak_secret_info(&info);
	printf("%lu secrets in %llu KiB locked, arenas of %zu KiB: %s\n", n,
	       (unsigned long long)s.locked_bytes >> 10, info.arena_size >> 10,
	       cloak_secret_last_error());
	return n >= 500 && s.locked_bytes <= 64 << 10 && info.arena_size == 16 << 10 ? 0 : 3;
}

/* Runs freed by small secrets go back to their arenas and serve larger
 * ones: a burst of small secrets does not starve other sizes. */
static int burst_then_larger(void)
{
	if (!limit_locked_memory(256 << 10))
		return 2;
	static void *p[100000];
	void *keep = cloak_secret_alloc(32);
	unsigned long n = fill_with_small(p, 100000);
	for (unsigned long i = 0; i < n; i++)
		cloak_secret_free(p[i]);
	unsigned long big = 0;
	while (big < 1000 && (p[big] = cloak_secret_alloc(4000)))
		big++;
	printf("%lu small secrets, then %lu of 4000 bytes: %s\n", n, big, cloak_secret_last_error());
	cloak_secret_free(keep);
	return n > 2000 && big >= 20 ? 0 : 3;
}

/* A freed 512 KiB secret is kept for reuse; when the limit is reached, it is
 * given back so that small secrets can have the memory. */
static int cache_yields_to_the_limit(void)
{
	if (!limit_locked_memory(LIMIT))
		return 2;
	void *keep = cloak_secret_alloc(32);
	cloak_secret_free(cloak_secret_alloc(512 << 10));
	struct cloak_secret_stats s;
	cloak_secret_stats(&s);
	if (s.cached_mappings != 1)
		return 3;
	static void *p[200000];
	unsigned long n = fill_with_small(p, 200000);
	cloak_secret_stats(&s);
	printf("%lu secrets, %llu KiB locked, %llu cached\n", n,
	       (unsigned long long)s.locked_bytes >> 10, (unsigned long long)s.cached_mappings);
	cloak_secret_free(keep);
	return s.cached_mappings == 0 && s.locked_bytes >= LIMIT - (256 << 10) ? 0 : 4;
}

/* The fallback obeys the lock limit too: ENOMEM, not unlocked memory. */
static int fallback_exhausted(void)
{
	if (!limit_locked_memory(LIMIT))
		return 2;
	for (unsigned long n = 0; n < 10ul * LIMIT / 32; n++)
		if (!cloak_secret_alloc(32)) {
			printf("%s\n", cloak_secret_last_error());
			return errno == ENOMEM ? 0 : 3;
		}
	return 4;
}

static const struct scenario scenarios[] = {
	{ "exhaust_memlock", exhaust_memlock },
	{ "allocate_one", allocate_one },
	{ "fallback_by_api", fallback_by_api },
	{ "fallback_exhausted", fallback_exhausted },
	{ "small_limit", small_limit },
	{ "burst_then_larger", burst_then_larger },
	{ "cache_yields_to_the_limit", cache_yields_to_the_limit },
	{ NULL, NULL },
};

static void check_child(const char *name, const char *const *env, int code, const char *expect)
{
	print_message("# %s: %s", name, expect_exit(name, env, code, expect)->out);
}

static void memlock_exhaustion_gives_enomem(void **state)
{
	REQUIRE_LOCKED_MEMORY(LIMIT);
	check_child("exhaust_memlock", NULL, 0, "RLIMIT_MEMLOCK exhausted");
}

static void small_limits_serve_small_secrets(void **state)
{
	check_child("small_limit", NULL, 0, "RLIMIT_MEMLOCK exhausted");
}

static void freed_runs_serve_other_sizes(void **state)
{
	check_child("burst_then_larger", NULL, 0, NULL);
}

static void reuse_cache_yields_to_the_limit(void **state)
{
	REQUIRE_LOCKED_MEMORY(LIMIT);
	check_child("cache_yields_to_the_limit", NULL, 0, NULL);
}

static void no_secretmem_refused_by_default(void **state)
{
	static const char *const env[] = { "CLOAK_TEST_NO_SECRETMEM=1", NULL };
	check_child("allocate_one", env, 1, "backend none protections 0 policy 0 ptr null errno 12");
	check_child("allocate_one", env, 1, "CLOAK_FALLBACK=mlock");
}

static void fallback_accepted_by_environment(void **state)
{
	static const char *const env[] = { "CLOAK_TEST_NO_SECRETMEM=1", "CLOAK_FALLBACK=mlock", NULL };
	char expect[128];
	snprintf(expect, sizeof expect, "backend mlock-fallback protections %#x policy 1 ptr ok",
	         CLOAK_SECRET_PROT_LOCKED | CLOAK_SECRET_PROT_NO_DUMP | CLOAK_SECRET_PROT_NO_FORK | CLOAK_SECRET_PROT_CANARIES |
	         CLOAK_SECRET_PROT_ZERO_ON_FREE);
	check_child("allocate_one", env, 0, expect);
}

static void fallback_accepted_by_api(void **state)
{
	static const char *const env[] = { "CLOAK_TEST_NO_SECRETMEM=1", NULL };
	check_child("fallback_by_api", env, 0, "VmFlags");
}

static void fallback_respects_the_limit(void **state)
{
	REQUIRE_LOCKED_MEMORY(LIMIT);
	static const char *const env[] = { "CLOAK_TEST_NO_SECRETMEM=1", "CLOAK_FALLBACK=mlock", NULL };
	check_child("fallback_exhausted", env, 0, "RLIMIT_MEMLOCK exhausted");
}

int main(int argc, char **argv)
{
	scenario_dispatch(argc, argv, scenarios);
	require_secretmem_or_skip_all();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(memlock_exhaustion_gives_enomem),
		cmocka_unit_test(small_limits_serve_small_secrets),
		cmocka_unit_test(freed_runs_serve_other_sizes),
		cmocka_unit_test(reuse_cache_yields_to_the_limit),
		cmocka_unit_test(no_secretmem_refused_by_default),
		cmocka_unit_test(fallback_accepted_by_environment),
		cmocka_unit_test(fallback_accepted_by_api),
		cmocka_unit_test(fallback_respects_the_limit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

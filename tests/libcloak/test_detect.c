/* SPDX-License-Identifier: ISC */
/*
 * libcloak detects misuse: each scenario runs in a child process and must end
 * the way the documentation says: an abort with a message naming the problem
 * (overflow, underflow, double free, foreign pointer), or an immediate fault
 * for guarded memory and protection changes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <cloak/secret.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "child.h"
#include "idle.h"

/* Keeps the compiler from dropping or reordering the deliberate misuse. */
static void touch(volatile unsigned char *p, unsigned char v)
{
	*p = v;
}
/* Changes a byte to a value it provably did not have: a canary or tag byte
 * overwritten with a fixed value already held it one time in 256. */
static void flip(volatile unsigned char *p)
{
	*p = (unsigned char)~*p;
}
static unsigned char peek(volatile unsigned char *p)
{
	return *p;
}

static int pooled_overflow(void)
{
	unsigned char *p = cloak_secret_alloc(32);
	flip(p + 32);
	cloak_secret_free(p);
	return 0;
}

static int pooled_underflow(void)
{
	unsigned char *p = cloak_secret_alloc(100);
	flip(p - 1);
	cloak_secret_free(p);
	return 0;
}

/* With another secret live, the freed slot stays in its arena, tagged free. */
static int pooled_double_free(void)
{
	void *keep = cloak_secret_alloc(24);
	unsigned char *p = cloak_secret_alloc(24);
	cloak_secret_free(p);
	cloak_secret_free(p);
	cloak_secret_free(keep);
	return 0;
}

/* With nothing else live the arena stays for a while (idle.c), its slot
 * tagged free, so a second free at once is the pool's "double free"; once
 * the memory has gone back to the kernel, the second free is still named. */
static int pooled_double_free_after_release(void)
{
	unsigned char *p = cloak_secret_alloc(24);
	cloak_secret_free(p);
	idle_release_now();
	cloak_secret_free(p);
	return 0;
}

static int foreign_pointer(void)
{
	char *p = malloc(64);
	cloak_secret_free(p);
	return 0;
}

static int guarded_overflow_faults(void)
{
	catch_faults();
	unsigned char *p = cloak_secret_alloc_guarded(13);
	touch(p + 13, 1); /* the next byte is the guard page */
	printf("overflow did not fault\n");
	return 0;
}

static int guarded_underflow(void)
{
	unsigned char *p = cloak_secret_alloc_guarded(40);
	flip(p - 3);
	cloak_secret_protect(p, CLOAK_SECRET_READONLY);
	cloak_secret_free(p);
	return 0;
}

/* The 16 bytes before a guarded secret are checked, as libsodium checks:
 * damage 9 to 16 bytes before it (its canary, not its header). */
static int guarded_deep_underflow(void)
{
	unsigned char *p = cloak_secret_alloc_guarded(40);
	flip(p - 16);
	flip(p - 9);
	cloak_secret_free(p);
	return 0;
}

static int guarded_double_free(void)
{
	unsigned char *p = cloak_secret_alloc_guarded(40);
	cloak_secret_free(p);
	cloak_secret_free(p);
	return 0;
}

static int large_overflow_into_slack(void)
{
	unsigned char *p = cloak_secret_alloc(100001); /* 16-aligned: 15 bytes of slack */
	flip(p + 100001);
	cloak_secret_free(p);
	return 0;
}

/* A guarded secret holding 7, then put under protection `mode`; faults end
 * the scenario with FAULT_EXIT. */
static unsigned char *protected_secret(int mode)
{
	catch_faults();
	unsigned char *p = cloak_secret_alloc_guarded(64);
	p[0] = 7;
	cloak_secret_protect(p, mode);
	return p;
}

static int noaccess_read_faults(void)
{
	unsigned char *p = protected_secret(CLOAK_SECRET_NOACCESS);
	printf("read %d\n", peek(p));
	return 0;
}

static int readonly_write_faults(void)
{
	unsigned char *p = protected_secret(CLOAK_SECRET_READONLY);
	if (peek(p) != 7)
		return 3;
	printf("read ok\n");
	fflush(stdout);
	touch(p, 8);
	printf("write did not fault\n");
	return 0;
}

/* CLOAK_DEBUG=guard: an ordinary allocation now faults on overflow. */
static int debug_guard_all(void)
{
	struct cloak_secret_info info;
	cloak_secret_info(&info);
	if (!(info.protections & CLOAK_SECRET_PROT_GUARD_ALL))
		return 3;
	catch_faults();
	unsigned char *p = cloak_secret_alloc(32);
	if (cloak_secret_protect(p, CLOAK_SECRET_READONLY) != 0)
		return 4;
	cloak_secret_protect(p, CLOAK_SECRET_READWRITE);
	touch(p + 32, 1);
	printf("overflow did not fault\n");
	return 0;
}

static const struct scenario scenarios[] = {
	{ "pooled_overflow", pooled_overflow },
	{ "pooled_underflow", pooled_underflow },
	{ "pooled_double_free", pooled_double_free },
	{ "pooled_double_free_after_release", pooled_double_free_after_release },
	{ "foreign_pointer", foreign_pointer },
	{ "guarded_overflow_faults", guarded_overflow_faults },
	{ "guarded_underflow", guarded_underflow },
	{ "guarded_deep_underflow", guarded_deep_underflow },
	{ "guarded_double_free", guarded_double_free },
	{ "large_overflow_into_slack", large_overflow_into_slack },
	{ "noaccess_read_faults", noaccess_read_faults },
	{ "readonly_write_faults", readonly_write_faults },
	{ "debug_guard_all", debug_guard_all },
	{ NULL, NULL },
};

static void expect_abort(const char *scenario, const char *message)
{
	expect_signal(scenario, NULL, SIGABRT, message);
}

static void expect_fault(const char *scenario, const char *const *env)
{
	expect_exit(scenario, env, FAULT_EXIT, NULL);
}

static void overflow_aborts(void **state)
{
	expect_abort("pooled_overflow", "heap overflow");
	expect_abort("large_overflow_into_slack", "heap overflow");
}

static void underflow_aborts(void **state)
{
	expect_abort("pooled_underflow", "heap underflow");
	expect_abort("guarded_underflow", "heap underflow");
	expect_abort("guarded_deep_underflow", "heap underflow");
}

static void double_free_aborts(void **state)
{
	expect_abort("pooled_double_free", "double free");
	expect_abort("pooled_double_free_after_release",
	             "a double free (or use after free) of a pooled secret: it was freed already, as "
	             "the last live secret, and libcloak then gave its memory back to the kernel");
	/* The guarded mapping waits in the reuse cache (mapped.c), which names it. */
	expect_abort("guarded_double_free", "a double free of a guarded or large secret");
}

static void foreign_pointer_aborts(void **state)
{
	expect_abort("foreign_pointer", "not a live libcloak allocation");
}

static void guard_page_faults_at_once(void **state)
{
	expect_fault("guarded_overflow_faults", NULL);
}

static void protection_changes_fault(void **state)
{
	expect_fault("noaccess_read_faults", NULL);
	expect_exit("readonly_write_faults", NULL, FAULT_EXIT, "read ok");
}

static void debug_mode_guards_everything(void **state)
{
	static const char *const env[] = { "CLOAK_DEBUG=guard", NULL };
	expect_fault("debug_guard_all", env);
}

int main(int argc, char **argv)
{
	scenario_dispatch(argc, argv, scenarios);
	require_secretmem_or_skip_all();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(overflow_aborts),
		cmocka_unit_test(underflow_aborts),
		cmocka_unit_test(double_free_aborts),
		cmocka_unit_test(foreign_pointer_aborts),
		cmocka_unit_test(guard_page_faults_at_once),
		cmocka_unit_test(protection_changes_fault),
		cmocka_unit_test(debug_mode_guards_everything),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

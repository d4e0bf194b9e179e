/* SPDX-License-Identifier: ISC */
/*
 * libcloak-sodium: libsodium's guarded-heap API with its documented semantics
 * (checked against what libsodium's own tests sodium_utils2/3/4 require),
 * on memory that process_vm_readv cannot read. Nothing here links libsodium:
 * the functions come from libcloak-sodium.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "child.h"

#include "sodium_api.h"

static void poke(volatile unsigned char *p, unsigned char v)
{
	*p = v;
}

static int overflow_faults(void)
{
	catch_faults();
	unsigned char *p = sodium_malloc(1000);
	poke(p + 1000, 0);
	return 0;
}

/* libsodium's sodium_utils3: damage bytes before the data, make it
 * read-only, free: the damage must be caught, with SIGSEGV as libsodium
 * raises (its test's handler expects exactly that). libsodium's canary is
 * the 16 bytes before the data: damage at -1 and at -16 must both be seen.
 * Each byte is changed to its complement, a value it provably did not have. */
static int underflow_at(int offset)
{
	unsigned char *p = sodium_malloc(1234);
	poke(p - offset, (unsigned char)~p[-offset]);
	sodium_mprotect_readonly(p);
	sodium_free(p);
	return 0;
}

static int underflow_by_1(void)
{
	return underflow_at(1);
}

static int underflow_by_16(void)
{
	return underflow_at(16);
}

/* A forked child keeps its secrets, as it keeps libsodium's memory. */
static int child_keeps_keys(void)
{
	unsigned char *k = sodium_malloc(32);
	memset(k, 0x42, 32);
	sodium_mprotect_readonly(k);
	pid_t pid = fork();
	if (pid == 0)
		_exit(k[0] == 0x42 && k[31] == 0x42 ? 0 : 1);
	int status;
	waitpid(pid, &status, 0);
	sodium_free(k);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int noaccess_faults(void)
{
	catch_faults();
	unsigned char *p = sodium_malloc(64);
	sodium_mprotect_noaccess(p);
	poke(p, 1);
	return 0;
}

static const struct scenario scenarios[] = {
	{ "overflow_faults", overflow_faults },
	{ "underflow_by_1", underflow_by_1 },
	{ "underflow_by_16", underflow_by_16 },
	{ "child_keeps_keys", child_keeps_keys },
	{ "noaccess_faults", noaccess_faults },
	{ NULL, NULL },
};

static void sizes_and_overflowing_requests(void **state)
{
	errno = 0;
	assert_null(sodium_malloc(SIZE_MAX - 1));
	assert_int_equal(errno, ENOMEM);
	errno = 0;
	assert_null(sodium_allocarray(SIZE_MAX / 2 + 1, SIZE_MAX / 2));
	assert_int_equal(errno, ENOMEM);
	unsigned char *p = sodium_allocarray(1000, 50);
	assert_non_null(p);
	memset(p, 0, 50000);
	sodium_free(p);
	sodium_free(sodium_malloc(0));
	sodium_free(sodium_allocarray(0, 100));
	sodium_free(sodium_allocarray(100, 0));
	sodium_free(NULL);
}

static void guard_page_layout_and_garbage_fill(void **state)
{
	for (size_t size = 1; size < 100000; size = size * 3 + 1) {
		unsigned char *p = sodium_malloc(size);
		assert_non_null(p);
		assert_int_equal(((uintptr_t)p + size) % 4096, 0);
		for (size_t i = 0; i < size; i++)
			if (p[i] != 0xdb)
				fail_msg("byte %zu of %zu is %#x, not the 0xdb fill", i, size, p[i]);
		memset(p, (int)size, size);
		assert_int_equal(sodium_mprotect_readonly(p), 0);
		sodium_free(p); /* freeing read-only memory works */
	}
}

static void contents_survive_protection_changes(void **state)
{
	unsigned char *p = sodium_malloc(100);
	memset(p, 0x42, 100);
	assert_int_equal(sodium_mprotect_noaccess(p), 0);
	assert_int_equal(sodium_mprotect_readwrite(p), 0);
	assert_int_equal(p[0], 0x42);
	assert_int_equal(sodium_mprotect_readonly(p), 0);
	assert_int_equal(p[99], 0x42);
	assert_int_equal(sodium_mprotect_readwrite(p), 0);
	p[0] = 1;
	assert_int_equal(sodium_mprotect_noaccess(p), 0);
	sodium_free(p); /* and freeing no-access memory too */
}

static void memory_is_secret(void **state)
{
	unsigned char *p = sodium_malloc(32);
	char buf[32];
	struct iovec local = { buf, 32 }, remote = { p, 32 };
	errno = 0;
	assert_int_equal(process_vm_readv(getpid(), &local, 1, &remote, 1, 0), -1);
	assert_int_equal(errno, EFAULT);
	sodium_free(p);
}

static void misuse_is_caught(void **state)
{
	expect_exit("overflow_faults", NULL, FAULT_EXIT, NULL);
	expect_exit("noaccess_faults", NULL, FAULT_EXIT, NULL);
	/* Under AddressSanitizer, its own SIGSEGV handler would report the signal
	 * instead of letting it end the process. */
	static const char *const no_asan_segv[] = {
		"ASAN_OPTIONS=detect_leaks=0:abort_on_error=0:handle_segv=0", NULL
	};
	expect_signal("underflow_by_1", no_asan_segv, SIGSEGV, "heap underflow");
	expect_signal("underflow_by_16", no_asan_segv, SIGSEGV, "heap underflow");
}

static void forked_child_keeps_keys(void **state)
{
	expect_exit("child_keeps_keys", NULL, 0, NULL);
}

int main(int argc, char **argv)
{
	scenario_dispatch(argc, argv, scenarios);
	require_secretmem_or_skip_all();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sizes_and_overflowing_requests),
		cmocka_unit_test(guard_page_layout_and_garbage_fill),
		cmocka_unit_test(contents_survive_protection_changes),
		cmocka_unit_test(memory_is_secret),
		cmocka_unit_test(misuse_is_caught),
		cmocka_unit_test(forked_child_keeps_keys),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

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
#include <stdint.h>
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

/* libsodium's sodium_utils3: damage the 8 bytes before the data, make it
 * read-only, free: the damage must be caught. */
static int underflow_caught_on_free(void)
{
	unsigned char *p = sodium_malloc(1234);
	for (int i = 1; i <= 8; i++)
		poke(p - i, 0);
	sodium_mprotect_readonly(p);
	sodium_free(p);
	return 0;
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
	{ "underflow_caught_on_free", underflow_caught_on_free },
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
	struct child_result r;
	run_scenario("overflow_faults", NULL, NULL, &r);
	if (!r.exited || r.code != FAULT_EXIT)
		fail_msg("overflow: exit %d signal %d: %s", r.code, r.signal, r.out);
	run_scenario("noaccess_faults", NULL, NULL, &r);
	if (!r.exited || r.code != FAULT_EXIT)
		fail_msg("noaccess: exit %d signal %d: %s", r.code, r.signal, r.out);
	run_scenario("underflow_caught_on_free", NULL, NULL, &r);
	if (r.exited || !strstr(r.out, "heap underflow"))
		fail_msg("underflow: exit %d signal %d: %s", r.code, r.signal, r.out);
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
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Host paths these machines cannot take, against fake KVM answers:
 * guest_memfd planning for hosts these machines are not (NO_DIRECT_MAP,
 * private attributes, no guest_memfd), and KVM_RUN's EFAULT on secret
 * memory (VMX/SVM hosts). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <string.h>

#include <cmocka.h>

#include "cloak/abi.h"
#include "gmem.h"
#include "vm.h"
#include "kvm_compat.h"

static void test_no_guest_memfd(void **state)
{
	struct gmem_caps c = { 0 };
	struct gmem_plan p;
	char err[256];
	assert_int_equal(gmem_plan(&c, &p, err, sizeof err), -1);
	assert_non_null(strstr(err, "no guest_memfd"));
}

static void test_private_only(void **state)
{
	/* guest_memfd without MMAP (SNP/TDX style): not drivable yet. */
	struct gmem_caps c = { .guest_memfd = true, .user_memory2 = true, .flags = 0,
			       .attributes = KVM_MEMORY_ATTRIBUTE_PRIVATE };
	struct gmem_plan p;
	char err[256];
	assert_int_equal(gmem_plan(&c, &p, err, sizeof err), -1);
	assert_non_null(strstr(err, "MMAP|INIT_SHARED"));
}

static void test_this_host(void **state)
{
	/* What these machines report: flags 3, no attributes. */
	struct gmem_caps c = { .guest_memfd = true, .user_memory2 = true, .flags = 3 };
	struct gmem_plan p;
	char err[256];
	assert_int_equal(gmem_plan(&c, &p, err, sizeof err), 0);
	assert_int_equal(p.flags, GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED);
	assert_false(p.no_direct_map);
	assert_false(p.private_possible);
}

static void test_no_direct_map_host(void **state)
{
	/* A host with the (proposed) NO_DIRECT_MAP flag and private attributes. */
	struct gmem_caps c = { .guest_memfd = true, .user_memory2 = true,
			       .flags = 3 | CLOAK_GUEST_MEMFD_FLAG_NO_DIRECT_MAP,
			       .attributes = KVM_MEMORY_ATTRIBUTE_PRIVATE };
	struct gmem_plan p;
	char err[256];
	assert_int_equal(gmem_plan(&c, &p, err, sizeof err), 0);
	assert_true(p.flags & CLOAK_GUEST_MEMFD_FLAG_NO_DIRECT_MAP);
	assert_true(p.no_direct_map);
	assert_true(p.private_possible);
}

/* A host whose KVM faults guest pages in with GUP (VMX/SVM) cannot run a
 * guest from memfd_secret: KVM_RUN fails with EFAULT, and the monitor must
 * say so and point to gmem rather than report a crash. */
static void test_efault_on_secret(void **state)
{
	char msg[256];
	assert_int_equal(run_error_diagnosis(EFAULT, GM_BACKEND_SECRET, msg, sizeof msg),
			 CLOAK_EXIT_NOHOST);
	assert_non_null(strstr(msg, "--memory=gmem"));
	assert_int_equal(run_error_diagnosis(EFAULT, GM_BACKEND_SHARED, msg, sizeof msg),
			 CLOAK_EXIT_CRASH);
	assert_int_equal(run_error_diagnosis(EINVAL, GM_BACKEND_SECRET, msg, sizeof msg),
			 CLOAK_EXIT_CRASH);
	assert_non_null(strstr(msg, "KVM_RUN failed"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_guest_memfd),
		cmocka_unit_test(test_private_only),
		cmocka_unit_test(test_this_host),
		cmocka_unit_test(test_no_direct_map_host),
		cmocka_unit_test(test_efault_on_secret),
	};
	return cmocka_run_group_tests_name("host_paths", tests, NULL, NULL);
}

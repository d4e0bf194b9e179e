/* SPDX-License-Identifier: ISC */
/* Checked guest-memory access, the share bitmap, and wiping at release. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>
#include <errno.h>

#include "cloak/abi.h"
#include "kvm/kvm_compat.h"
#include "mem/backend.h"
#include "mem/guest_memfd.h"
#include "mem/guestmem.h"
#include "mem/inspect.h"
#include "mem/sharemap.h"

#define MEM (8ull << 20)
#define PG CLOAK_PAGE_SIZE

static struct guestmem *mk(enum gm_backend b)
{
	struct fail f = { 0 };
	struct guestmem *gm = gm_create(b, MEM, -1, &f);
	if (!gm)
		fail_msg("gm_create: %s", f.msg);
	return gm;
}

/* The secret backend, or SKIP where the host lacks memfd_secret (FAIL
 * under CLOAK_REQUIRE_KVM=1). */
static struct guestmem *mk_secret(void)
{
	struct fail f = { 0 };
	struct guestmem *gm = gm_create(GM_BACKEND_SECRET, MEM, -1, &f);
	if (!gm) {
		const char *req = getenv("CLOAK_REQUIRE_KVM");
		if (req && !strcmp(req, "1"))
			fail_msg("secret backend unavailable: %s", f.msg);
		skip();
	}
	return gm;
}

/* The bitmap against a plain bool array under random range operations. */
static void test_sharemap_model(void **state)
{
	const uint64_t n = 5000;
	struct sharemap m;
	assert_int_equal(sharemap_init(&m, n), 0);
	unsigned char *model = calloc(n, 1);
	srand(7);
	for (int it = 0; it < 20000; it++) {
		uint64_t a = (uint64_t)rand() % n, len = 1 + (uint64_t)rand() % 200;
		if (a + len > n)
			len = n - a;
		int op = rand() % 3;
		if (op == 0) {
			sharemap_set(&m, a, len);
			memset(model + a, 1, len);
		} else if (op == 1) {
			sharemap_clear(&m, a, len);
			memset(model + a, 0, len);
		} else {
			int all = 1;
			for (uint64_t i = a; i < a + len; i++)
				all &= model[i];
			assert_int_equal(sharemap_all_set(&m, a, len), all);
		}
	}
	uint64_t cnt = 0;
	for (uint64_t i = 0; i < n; i++)
		cnt += model[i];
	assert_int_equal(m.nshared, cnt);
	uint64_t seen = 0;
	for (uint64_t p = sharemap_next_set(&m, 0); p < n; p = sharemap_next_set(&m, p + 1)) {
		assert_true(model[p]);
		seen++;
	}
	assert_int_equal(seen, cnt);
	free(model);
	sharemap_free(&m);
}

static void test_bounds(void **state)
{
	struct guestmem *gm = mk(GM_BACKEND_ANON);
	char buf[64] = "hello";
	assert_int_equal(gm_copy_to(gm, gpa(MEM - 5), buf, 5), GM_OK);
	assert_int_equal(gm_copy_to(gm, gpa(MEM - 4), buf, 5), GM_EFAULT);
	assert_int_equal(gm_copy_to(gm, gpa(MEM), buf, 1), GM_EFAULT);
	assert_int_equal(gm_copy_to(gm, gpa(MEM), buf, 0), GM_OK);
	assert_int_equal(gm_copy_to(gm, gpa(MEM + 1), buf, 0), GM_EFAULT);
	assert_int_equal(gm_copy_from(gm, buf, gpa(UINT64_MAX - 2), 8), GM_EFAULT);
	assert_int_equal(gm_copy_from(gm, buf, gpa(8), UINT64_MAX), GM_EFAULT);
	assert_int_equal(gm_zero(gm, gpa(1), UINT64_MAX), GM_EFAULT);
	char back[8] = "";
	assert_int_equal(gm_copy_from(gm, back, gpa(MEM - 5), 5), GM_OK);
	assert_memory_equal(back, "hello", 5);
	assert_true(gm_refused(gm) >= 6);
	gm_destroy(gm);
}

static void test_protection(void **state)
{
	struct guestmem *gm = mk(GM_BACKEND_ANON);
	char buf[3 * PG];
	memset(buf, 'A', sizeof buf);
	assert_int_equal(gm_copy_to(gm, gpa(0x100000), buf, sizeof buf), GM_OK);
	gm_protect(gm);
	assert_true(gm_protected(gm));
	/* Nothing shared: everything refused, even one byte. */
	assert_int_equal(gm_copy_from(gm, buf, gpa(0x100000), 1), GM_EACCES);
	/* Share pages 1 and 2 of three: a range touching page 0 is refused
	 * whole, with no partial copy. */
	assert_int_equal(gm_share(gm, gpa(0x101000), 2), GM_OK);
	memset(buf, 'Z', sizeof buf);
	assert_int_equal(gm_copy_to(gm, gpa(0x100ff0), buf, 32), GM_EACCES);
	memset(buf, 0, sizeof buf);
	assert_int_equal(gm_copy_from(gm, buf, gpa(0x101000), 2 * PG), GM_OK);
	assert_int_equal(buf[0], 'A');
	assert_int_equal(gm_copy_from(gm, buf, gpa(0x100ff0), 32), GM_EACCES);
	assert_int_equal(gm_copy_from(gm, buf, gpa(0x102ff0), 32), GM_EACCES);
	/* The refused write left page 0 intact ('A', not 'Z'). */
	gm_share(gm, gpa(0x100000), 1);
	assert_int_equal(gm_copy_from(gm, buf, gpa(0x100ff0), 16), GM_OK);
	assert_int_equal(buf[0], 'A');
	/* Unshare takes effect at once. */
	assert_int_equal(gm_unshare(gm, gpa(0x101000), 1), GM_OK);
	assert_int_equal(gm_copy_from(gm, buf, gpa(0x101000), 8), GM_EACCES);
	assert_int_equal(gm_copy_from(gm, buf, gpa(0x102000), 8), GM_OK);
	/* Repeats are idempotent. */
	assert_int_equal(gm_share(gm, gpa(0x102000), 1), GM_OK);
	assert_int_equal(gm_unshare(gm, gpa(0x101000), 1), GM_OK);
	/* Two of these, and the monitor window, shared from the start. */
	assert_int_equal(gm_shared_pages(gm), 2 + CLOAK_MONITOR_WINDOW_PAGES);
	gm_destroy(gm);
}

static void test_share_validation(void **state)
{
	struct guestmem *gm = mk(GM_BACKEND_ANON);
	assert_int_equal(gm_share(gm, gpa(0x1001), 1), GM_EINVAL);
	assert_int_equal(gm_share(gm, gpa(0x1000), 0), GM_EINVAL);
	assert_int_equal(gm_share(gm, gpa(MEM), 1), GM_EFAULT);
	assert_int_equal(gm_share(gm, gpa(MEM - PG), 2), GM_EFAULT);
	assert_int_equal(gm_share(gm, gpa(PG), UINT64_MAX / PG + 1), GM_EFAULT);
	assert_int_equal(gm_share(gm, gpa(UINT64_MAX & ~(PG - 1)), 1), GM_EFAULT);
	assert_int_equal(gm_unshare(gm, gpa(MEM - PG), 2), GM_EFAULT);
	assert_int_equal(gm_shared_pages(gm), CLOAK_MONITOR_WINDOW_PAGES);
	/* The monitor window cannot be unshared, even partly. */
	assert_int_equal(gm_unshare(gm, gpa(CLOAK_GPA_MONITOR_WINDOW - PG), 2), GM_EPERM);
	assert_true(gm_is_shared(gm, gpa(CLOAK_GPA_MONITOR_WINDOW), PG));
	assert_int_equal(gm_share(gm, gpa(0), MEM / PG), GM_OK);
	assert_int_equal(gm_shared_pages(gm), MEM / PG);
	gm_destroy(gm);
}

static void test_fd_io_checked(void **state)
{
	struct guestmem *gm = mk(GM_BACKEND_ANON);
	int p[2];
	assert_int_equal(pipe(p), 0);
	gm_copy_to(gm, gpa(0x200000), "secret!", 7);
	gm_protect(gm);
	uint64_t n = 99;
	assert_int_equal(gm_write_fd(gm, p[1], gpa(0x200000), 7, &n), GM_EACCES);
	assert_int_equal(n, 0);
	gm_share(gm, gpa(0x200000), 1);
	assert_int_equal(gm_write_fd(gm, p[1], gpa(0x200000), 7, &n), GM_OK);
	assert_int_equal(n, 7);
	assert_int_equal(gm_read_fd(gm, p[0], gpa(0x200100), 7, &n), GM_OK);
	assert_int_equal(n, 7);
	assert_int_equal(gm_pwrite(gm, p[1], gpa(MEM - 2), 7, 0, &n), GM_EFAULT);
	/* A host error is GM_EIO with errno (a pipe cannot pwrite). */
	assert_int_equal(gm_pwrite(gm, p[1], gpa(0x200000), 7, 0, &n), GM_EIO);
	assert_int_equal(errno, ESPIPE);
	char b[8] = "";
	assert_int_equal(gm_copy_from(gm, b, gpa(0x200100), 7), GM_OK);
	assert_memory_equal(b, "secret!", 7);
	close(p[0]);
	close(p[1]);
	gm_destroy(gm);
}

/* Release wipes: keep a second reference to the backing file, destroy the
 * guest memory, then map the file again and look. */
static void wipe_check_vm(enum gm_backend b, int vm_fd)
{
	struct fail f = { 0 };
	struct guestmem *gm = gm_create_inspectable(b, MEM, vm_fd, &f);
	if (!gm)
		fail_msg("gm_create_inspectable: %s", f.msg);
	int fd = gm_inspect_dup_fd(gm);
	assert_true(fd >= 0);
	static char secret[3 * 4096];
	memset(secret, 0x5a, sizeof secret);
	/* A partly written 2 MiB region, one written whole, and the last
	 * page: every way the guest_memfd wipe narrows down its ranges. */
	assert_int_equal(gm_copy_to(gm, gpa(0x300000), secret, sizeof secret), GM_OK);
	for (uint64_t at = 0x400000; at < 0x600000; at += PG)
		assert_int_equal(gm_copy_to(gm, gpa(at), secret, PG), GM_OK);
	assert_int_equal(gm_copy_to(gm, gpa(MEM - 4096), secret, 4096), GM_OK);
	gm_destroy(gm);
	unsigned char *p = mmap(NULL, MEM, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(p != MAP_FAILED);
	size_t nonzero = 0;
	for (uint64_t i = 0; i < MEM; i++)
		nonzero += p[i] != 0;
	assert_int_equal(nonzero, 0);
	munmap(p, MEM);
	close(fd);
}

static void wipe_check(enum gm_backend b)
{
	wipe_check_vm(b, -1);
}

/* guest_memfd needs a VM: where this host's KVM makes no mappable one
 * (before 6.18, or an emulating KVM without it), SKIP; the SVM tier's 7.x
 * runs it. */
static void test_wipe_gmem(void **state)
{
	int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0) {
		print_message("SKIP: no /dev/kvm here (the SVM tier runs this)\n");
		skip();
	}
	int vm = ioctl(kvm, KVM_CREATE_VM, 0);
	assert_true(vm >= 0);
	struct guest_memfd_caps caps;
	struct guest_memfd_plan plan;
	struct fail f = { 0 };
	guest_memfd_probe(vm, &caps);
	if (guest_memfd_plan(&caps, &plan, &f)) {
		print_message("SKIP: %s\n", f.msg);
		close(vm);
		close(kvm);
		skip();
	}
	wipe_check_vm(GM_BACKEND_GMEM, vm);
	close(vm);
	close(kvm);
}

static void test_wipe_shared(void **state)
{
	wipe_check(GM_BACKEND_SHARED);
}

static void test_wipe_secret(void **state)
{
	gm_destroy(mk_secret()); /* skips where the backend is missing */
	wipe_check(GM_BACKEND_SECRET);
}

/* gm_zero on secret memory skips pages never faulted in (they are zero)
 * and really zeroes the ones that were written, including partial pages. */
static void test_zero_secret(void **state)
{
	struct guestmem *gm = mk_secret();
	static unsigned char junk[64 * 1024], back[64 * 1024];
	memset(junk, 0xa5, sizeof junk);
	/* Junk in pages 2..5 and in page 9, nothing in 6..8. */
	assert_int_equal(gm_copy_to(gm, gpa(0x102000), junk, 4 * PG), GM_OK);
	assert_int_equal(gm_copy_to(gm, gpa(0x109000), junk, PG), GM_OK);
	assert_int_equal(gm_zero(gm, gpa(0x102010), 8 * PG - 0x20), GM_OK);
	assert_int_equal(gm_copy_from(gm, back, gpa(0x102000), 10 * PG), GM_OK);
	for (uint64_t i = 0; i < 10 * PG; i++) {
		int inside = i >= 0x10 && i < 8 * PG - 0x10;
		unsigned char want = inside ? 0 : (i < 4 * PG || (i >= 7 * PG && i < 8 * PG)) ? 0xa5 : 0;
		if (back[i] != want)
			fail_msg("byte %llu: got 0x%x want 0x%x", (unsigned long long)i, back[i], want);
	}
	gm_destroy(gm);
}

/* In normal use the secret backend keeps no descriptor that another
 * process could take with pidfd_getfd. */
static void test_secret_keeps_no_fd(void **state)
{
	struct guestmem *gm = mk_secret();
	assert_int_equal(gm_inspect_dup_fd(gm), -1);
	gm_destroy(gm);
}

/* NO_GUP is claimed only where the check sees GUP refuse the memory: it
 * does for secret memory, and does not for an ordinary page. */
static void test_gup_check(void **state)
{
	static char ordinary[4096] = { 1 };
	assert_false(membackend_gup_refused(ordinary));
	struct guestmem *gm = mk_secret();
	struct gm_slot sl;
	gm_slot(gm, &sl);
	char one = 1;
	assert_int_equal(gm_copy_to(gm, gpa(0x100000), &one, 1), GM_OK);
	assert_true(membackend_gup_refused((const void *)(uintptr_t)(sl.userspace_addr + 0x100000)));
	assert_true(gm_host_protections(gm) & CLOAK_PROT_NO_GUP);
	gm_destroy(gm);
	gm = mk(GM_BACKEND_SHARED);
	assert_false(gm_host_protections(gm) & CLOAK_PROT_NO_GUP);
	gm_destroy(gm);
}

static void test_secret_is_secretmem(void **state)
{
	struct guestmem *gm = mk_secret();
	struct gm_slot sl;
	gm_slot(gm, &sl);
	/* /proc/self/maps names the mapping "secretmem". */
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int found = 0;
	while (fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo == sl.userspace_addr)
			found = strstr(line, "secretmem") != NULL;
	}
	fclose(f);
	assert_true(found);
	gm_destroy(gm);
}

/* Whether the monitor maps the page at gpa: mincore fails with ENOMEM on
 * an address with no mapping. */
static bool mapped(struct guestmem *gm, uint64_t g)
{
	struct gm_slot sl;
	gm_slot(gm, &sl);
	unsigned char v;
	return mincore((void *)(uintptr_t)(sl.userspace_addr + g), PG, &v) == 0;
}

/* How many of this process's descriptors name guest memory's file. */
static int guest_fds(void)
{
	int n = 0;
	char path[64], link[256];
	for (int fd = 0; fd < 1024; fd++) {
		snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
		ssize_t l = readlink(path, link, sizeof link - 1);
		if (l > 0) {
			link[l] = 0;
			n += strstr(link, "memfd:cloak-guest") != NULL;
		}
	}
	return n;
}

/* Giving memory up at PROTECT: every private page unmapped, the
 * descriptor closed, NO_VMM_MAP reported, the shared window fixed. */
static void test_give_up(void **state)
{
	struct fail f = { 0 };
	struct guestmem *gm = gm_create_inspectable(GM_BACKEND_SHARED, MEM, -1, &f);
	if (!gm)
		fail_msg("%s", f.msg);
	const uint64_t a = 0x200000, b = 0x300000;
	assert_int_equal(gm_copy_to(gm, gpa(b), "private", 7), GM_OK);
	assert_int_equal(gm_share(gm, gpa(a), 1), GM_OK);
	gm_inspect_force_give_up(gm);
	assert_int_equal(guest_fds(), 1);
	gm_protect(gm);
	assert_true(gm_gave_up(gm));
	assert_int_equal(guest_fds(), 0); /* no descriptor left to map it again */
	assert_true(gm_host_protections(gm) & CLOAK_PROT_NO_VMM_MAP);
	assert_int_equal(gm_inspect_dup_fd(gm), -1);
	assert_true(mapped(gm, a));
	assert_true(mapped(gm, CLOAK_GPA_MONITOR_WINDOW));
	assert_false(mapped(gm, b));
	assert_false(mapped(gm, 0x100000));
	assert_false(mapped(gm, MEM - PG));
	char buf[8];
	assert_int_equal(gm_copy_from(gm, buf, gpa(a), 8), GM_OK);
	assert_int_equal(gm_copy_from(gm, buf, gpa(b), 8), GM_EACCES);
	/* The window is fixed: a given-up page cannot be shared again. */
	assert_int_equal(gm_share(gm, gpa(b), 1), GM_EPERM);
	assert_int_equal(gm_share(gm, gpa(a), 1), GM_OK);
	assert_int_equal(gm_unshare(gm, gpa(a), 1), GM_OK);
	assert_false(mapped(gm, a));
	assert_int_equal(gm_share(gm, gpa(a), 1), GM_EPERM);
	assert_int_equal(gm_unshare(gm, gpa(CLOAK_GPA_MONITOR_WINDOW), 1), GM_EPERM);
	gm_destroy(gm);
	/* Without giving up (the host's KVM needs the mapping), all stays. */
	gm = mk(GM_BACKEND_SHARED);
	gm_protect(gm);
	assert_false(gm_gave_up(gm));
	assert_false(gm_host_protections(gm) & CLOAK_PROT_NO_VMM_MAP);
	assert_true(mapped(gm, b));
	gm_destroy(gm);
}

/* The one translation of statuses into the ABI's codes. */
static void test_status_abi(void **state)
{
	assert_int_equal(gm_status_abi(GM_OK), 0);
	assert_int_equal(gm_status_abi(GM_EFAULT), -CLOAK_EFAULT);
	assert_int_equal(gm_status_abi(GM_EACCES), -CLOAK_EACCES);
	assert_int_equal(gm_status_abi(GM_EINVAL), -CLOAK_EINVAL);
	assert_int_equal(gm_status_abi(GM_EPERM), -CLOAK_EPERM);
	assert_int_equal(gm_status_abi(GM_EIO), -CLOAK_EIO);
	/* And of backends into what PROTECT reports. */
	assert_int_equal(gm_backend_abi(GM_BACKEND_SECRET), CLOAK_BACKEND_SECRET);
	assert_int_equal(gm_backend_abi(GM_BACKEND_GMEM), CLOAK_BACKEND_GMEM);
	assert_int_equal(gm_backend_abi(GM_BACKEND_SHARED), CLOAK_BACKEND_SHARED);
	assert_int_equal(gm_backend_abi(GM_BACKEND_ANON), CLOAK_BACKEND_SHARED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sharemap_model),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_protection),
		cmocka_unit_test(test_share_validation),
		cmocka_unit_test(test_fd_io_checked),
		cmocka_unit_test(test_wipe_shared),
		cmocka_unit_test(test_wipe_secret),
		cmocka_unit_test(test_wipe_gmem),
		cmocka_unit_test(test_secret_is_secretmem),
		cmocka_unit_test(test_gup_check),
		cmocka_unit_test(test_secret_keeps_no_fd),
		cmocka_unit_test(test_zero_secret),
		cmocka_unit_test(test_status_abi),
		cmocka_unit_test(test_give_up),
	};
	return cmocka_run_group_tests_name("guestmem", tests, NULL, NULL);
}

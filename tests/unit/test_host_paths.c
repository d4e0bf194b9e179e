/* SPDX-License-Identifier: ISC */
/*
 * Decisions about hosts, from their capabilities: the guest_memfd plan,
 * the automatic backend for every kind of host, what KVM_RUN failures and
 * emulation failures mean, and the CPUID a guest is given. All pure, so
 * every kind of host is covered whatever this one is.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cloak/abi.h"
#include "kvm/kvm.h"
#include "kvm/kvm_compat.h"
#include "runner/diagnose.h"
#include "mem/guest_memfd.h"
#include "mem/select.h"
#include "x86/cpu.h"

static void test_no_guest_memfd(void **state)
{
	struct guest_memfd_caps c = { 0 };
	struct guest_memfd_plan p;
	struct fail f = { 0 };
	assert_int_equal(guest_memfd_plan(&c, &p, &f), -1);
	assert_int_equal(f.status, CLOAK_EXIT_NOHOST);
	assert_non_null(strstr(f.msg, "no guest_memfd"));
}

static void test_private_only(void **state)
{
	/* guest_memfd without MMAP (what SNP/TDX VM types use): a default VM
	 * cannot run from it. */
	struct guest_memfd_caps c = { .guest_memfd = true, .user_memory2 = true, .flags = 0 };
	struct guest_memfd_plan p;
	struct fail f = { 0 };
	assert_int_equal(guest_memfd_plan(&c, &p, &f), -1);
	assert_non_null(strstr(f.msg, "MMAP|INIT_SHARED"));
}

static void test_mappable(void **state)
{
	/* Linux 6.18+: flags 3 (MMAP, INIT_SHARED). */
	struct guest_memfd_caps c = { .guest_memfd = true, .user_memory2 = true, .flags = 3 };
	struct guest_memfd_plan p;
	struct fail f = { 0 };
	assert_int_equal(guest_memfd_plan(&c, &p, &f), 0);
	assert_int_equal(p.flags, GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED);
	assert_false(p.no_direct_map);
}

static void test_no_direct_map_host(void **state)
{
	/* A host with the proposed NO_DIRECT_MAP flag asks for it. */
	struct guest_memfd_caps c = { .guest_memfd = true, .user_memory2 = true,
				      .flags = 3 | CLOAK_GUEST_MEMFD_FLAG_NO_DIRECT_MAP };
	struct guest_memfd_plan p;
	struct fail f = { 0 };
	assert_int_equal(guest_memfd_plan(&c, &p, &f), 0);
	assert_true(p.flags & CLOAK_GUEST_MEMFD_FLAG_NO_DIRECT_MAP);
	assert_true(p.no_direct_map);
}

/* The automatic backend on each kind of host: never one that fails there,
 * and a refusal that names --memory=shared, never another failing one. */
static void test_select(void **state)
{
	const struct guest_memfd_caps none = { 0 };
	const struct guest_memfd_caps mappable = { true, true, 3 };
	struct {
		struct gm_host h;
		int ok;
		enum gm_backend want;
	} cases[] = {
		{ { false, true, none }, 1, GM_BACKEND_SECRET },     /* emulating, 6.x */
		{ { false, true, mappable }, 1, GM_BACKEND_SECRET }, /* emulating, 6.18+ */
		{ { true, true, mappable }, 1, GM_BACKEND_GMEM },    /* VMX/SVM, 6.18+ */
		{ { true, true, none }, 0, 0 },                      /* VMX/SVM, 6.12 */
		{ { true, false, none }, 0, 0 },
		{ { false, false, mappable }, 0, 0 },                /* emulating, no secretmem */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		enum gm_backend b = GM_BACKEND_ANON;
		struct fail f = { 0 };
		int r = gm_select(&cases[i].h, &b, &f);
		if (cases[i].ok) {
			assert_int_equal(r, 0);
			assert_int_equal(b, cases[i].want);
		} else {
			assert_int_equal(r, -1);
			assert_int_equal(f.status, CLOAK_EXIT_NOHOST);
			assert_non_null(strstr(f.msg, "--memory=shared"));
			assert_null(strstr(f.msg, "--memory=gmem"));
			assert_null(strstr(f.msg, "--memory=secret"));
		}
	}
}

/* A KVM that faults guest pages in with GUP (VMX/SVM) cannot run a guest
 * from memfd_secret: KVM_RUN fails with EFAULT, and the monitor says so
 * without sending the user to another backend that may fail too. */
static void test_efault_on_secret(void **state)
{
	char msg[300];
	assert_int_equal(run_error_diagnosis(EFAULT, GM_BACKEND_SECRET, msg, sizeof msg),
			 CLOAK_EXIT_NOHOST);
	assert_non_null(strstr(msg, "GUP"));
	assert_null(strstr(msg, "--memory=gmem"));
	assert_int_equal(run_error_diagnosis(EFAULT, GM_BACKEND_SHARED, msg, sizeof msg),
			 CLOAK_EXIT_CRASH);
	assert_int_equal(run_error_diagnosis(EINVAL, GM_BACKEND_SECRET, msg, sizeof msg),
			 CLOAK_EXIT_CRASH);
	assert_non_null(strstr(msg, "KVM_RUN failed"));
}

/* Emulation failures name what is known, and blame SSE only for SSE. */
static void test_emulation_diagnosis(void **state)
{
	static const struct {
		uint8_t b[4];
		size_t n;
		enum gm_status unread;
		const char *want, *not;
	} cases[] = {
		{ { 0x0f, 0x59, 0xc1 }, 3, GM_OK, "SSE instruction (bytes 0f 59 c1)", NULL }, /* mulps */
		{ { 0x66, 0x0f, 0xfe, 0xc1 }, 4, GM_OK, "SSE", NULL },    /* paddd */
		{ { 0xcc }, 1, GM_OK, "int3", "SSE" },
		{ { 0xcd, 0x80 }, 2, GM_OK, "int n", "SSE" },
		{ { 0x0f, 0x34 }, 2, GM_OK, "sysenter", "SSE" },
		{ { 0x0f, 0x05 }, 2, GM_OK, "syscall", "SSE" },
		{ { 0xc5, 0xf8, 0x77 }, 3, GM_OK, "AVX", NULL },          /* vzeroupper */
		{ { 0x90 }, 1, GM_OK, "bytes 90", "SSE" },
		{ { 0 }, 0, GM_EACCES, "not shared", "SSE" },
		{ { 0 }, 0, GM_EFAULT, "executes outside its RAM: from MMIO", "shared" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char msg[200];
		run_emulation_diagnosis(cases[i].b, cases[i].n, cases[i].unread, msg, sizeof msg);
		if (!strstr(msg, cases[i].want))
			fail_msg("case %zu: '%s' lacks '%s'", i, msg, cases[i].want);
		if (cases[i].not && strstr(msg, cases[i].not))
			fail_msg("case %zu: '%s' blames '%s'", i, msg, cases[i].not);
	}
}

/* KVM_EXIT_HLT reports rip past the hlt: the message names the hlt. */
static void test_hlt_diagnosis(void **state)
{
	(void)state;
	char msg[200];
	run_hlt_diagnosis(0x10052f, 0xf4, 0xb8, msg, sizeof msg);
	assert_string_equal(msg, "guest halted (hlt at rip 0x10052e) without calling exit");
	run_hlt_diagnosis(0x10052f, -1, -1, msg, sizeof msg); /* private code */
	assert_string_equal(msg, "guest halted (hlt at rip 0x10052e) without calling exit");
	run_hlt_diagnosis(0x10052e, 0xfa, 0xf4, msg, sizeof msg); /* rip not advanced */
	assert_string_equal(msg, "guest halted (hlt at rip 0x10052e) without calling exit");
	run_hlt_diagnosis(0x100530, 0x90, 0x90, msg, sizeof msg);
	assert_non_null(strstr(msg, "a prefixed hlt ending at rip 0x100530"));
}

/* A vCPU KVM reset on the triple fault has no address to give. */
static void test_shutdown_diagnosis(void **state)
{
	(void)state;
	char msg[300];
	run_shutdown_diagnosis(true, 0xfff0, 0, msg, sizeof msg);
	assert_null(strstr(msg, "0xfff0"));
	assert_non_null(strstr(msg, "triple-faulted (KVM_EXIT_SHUTDOWN) at an unknown address"));
	assert_null(strstr(msg, "last exit"));
	run_shutdown_diagnosis(true, 0xfff0, 0x100a2b, msg, sizeof msg);
	assert_null(strstr(msg, "0xfff0"));
	assert_non_null(strstr(msg, "its last exit to the monitor was at rip 0x100a2b"));
	run_shutdown_diagnosis(false, 0x1002ff, 0x100a2b, msg, sizeof msg);
	assert_non_null(strstr(msg, "triple-faulted (KVM_EXIT_SHUTDOWN) at rip 0x1002ff: "));
}

static struct kvm_cpuid2 *cpuid_table(size_t n)
{
	struct kvm_cpuid2 *c = calloc(1, sizeof *c + n * sizeof(struct kvm_cpuid_entry2));
	assert_non_null(c);
	return c;
}

static void add(struct kvm_cpuid2 *c, uint32_t fn, uint32_t idx, uint32_t a, uint32_t b,
		uint32_t cx, uint32_t d)
{
	c->entries[c->nent++] = (struct kvm_cpuid_entry2){ .function = fn, .index = idx,
							   .eax = a, .ebx = b, .ecx = cx,
							   .edx = d };
}

static const struct kvm_cpuid_entry2 *leaf(const struct kvm_cpuid2 *c, uint32_t fn)
{
	for (uint32_t i = 0; i < c->nent; i++)
		if (c->entries[i].function == fn)
			return &c->entries[i];
	return NULL;
}

/* A guest_memfd is given up only where KVM steps over the instructions it
 * intercepts without decoding them from guest memory. */
static void test_steps_over_intercepts(void **state)
{
	(void)state;
	char why[200] = "";
	assert_true(kvm_steps_over_intercepts(true, NULL, why, sizeof why));
	assert_true(kvm_steps_over_intercepts(false, "Y\n", why, sizeof why));
	assert_true(kvm_steps_over_intercepts(false, "1\n", why, sizeof why));
	assert_false(kvm_steps_over_intercepts(false, "N\n", why, sizeof why));
	assert_non_null(strstr(why, "nrips=N"));
	assert_false(kvm_steps_over_intercepts(false, "0\n", why, sizeof why));
	why[0] = 0;
	assert_false(kvm_steps_over_intercepts(false, NULL, why, sizeof why));
	assert_non_null(strstr(why, "cannot tell"));
}

#define B(n) (1u << (n))
/* What the guest is given of leaf 1 ECX besides RDRAND where the CPU
 * runs guest code: PCLMULQDQ, SSSE3, SSE4.1, AES (BearSSL's hardware AES
 * and GHASH); of leaf 7 EBX never more than RDSEED. */
#define NATIVE_1_ECX (B(1) | B(9) | B(19) | B(25))

/* A host's CPUID as KVM reports it: every feature bit of leaf 1 ECX but
 * 10, 11, 16 and 18 (so VMX, XSAVE, OSXSAVE, AVX and the hypervisor bit
 * too), AVX2 and the new bits in leaf 7, KVM's leaves. */
static struct kvm_cpuid2 *host_cpuid(void)
{
	struct kvm_cpuid2 *c = cpuid_table(16);
	add(c, 0, 0, 0x10, 0x68747541, 0x444d4163, 0x69746e65);
	add(c, 1, 0, 0x00a00f11, 0x01020800, 0xfffaf3ff | B(5) | B(31), 0x178bfbff);
	add(c, 7, 0, 1, B(18) | B(0) | B(3) | B(5) | B(8) | B(19) | B(29), 0xffff, 0xffff);
	add(c, 7, 1, 0, 0xffffffff, 0, 0);
	add(c, 0xd, 0, 7, 0x340, 0x340, 0);
	add(c, 0x40000000u, 0, 0x40000001u, 0x4b4d564b, 0x564b4d56, 0x4d);
	add(c, 0x80000000u, 0, 0x80000023u, 0x68747541, 0x444d4163, 0x69746e65);
	add(c, 0x80000001u, 0, 0, 0, B(2) | B(0), B(20) | B(29) | B(26));
	return c;
}

/* What both kinds of KVM withhold. */
static void assert_withheld(const struct kvm_cpuid2 *c)
{
	assert_null(leaf(c, 0x40000000u));                  /* no KVM leaves */
	assert_null(leaf(c, 0xd));                          /* no XSAVE state leaf */
	assert_int_equal(leaf(c, 0)->eax, 7);
	assert_int_equal(leaf(c, 0)->ebx, 0x68747541);
	assert_int_equal(leaf(c, 1)->ecx & B(5), 0);        /* no VMX */
	assert_int_equal(leaf(c, 1)->ecx & B(31), 0);       /* no hypervisor bit */
	assert_int_equal(leaf(c, 1)->ecx & B(26), 0);       /* no XSAVE */
	assert_int_equal(leaf(c, 1)->ecx & B(27), 0);       /* no OSXSAVE */
	assert_int_equal(leaf(c, 1)->ecx & B(28), 0);       /* no AVX */
	assert_true(leaf(c, 1)->ecx & B(30));               /* RDRAND kept */
	assert_int_equal(leaf(c, 7)->ebx & B(5), 0);        /* no AVX2 */
	assert_true(leaf(c, 7)->ebx & B(18));               /* RDSEED kept */
	assert_int_equal(leaf(c, 7)->index, 0);             /* subleaf 1 dropped */
	assert_int_equal(leaf(c, 0x80000000u)->eax, 0x80000008u);
	assert_int_equal(leaf(c, 0x80000001u)->ecx, 0);     /* no SVM */
	assert_int_equal(leaf(c, 0x80000001u)->edx, B(20) | B(29));
}

/* A guest sees no virtualization features and no hypervisor leaves, and
 * keeps what it uses (NX, RDRAND, RDSEED, the vendor string); where the
 * CPU runs guest code, also the four bits BearSSL's hardware AES and
 * GHASH need (AES, PCLMULQDQ, SSSE3, SSE4.1), nothing else of the host's
 * extensions, and never what needs XCR0 (AVX, XSAVE). */
static void test_cpuid_filter(void **state)
{
	(void)state;
	struct kvm_cpuid2 *c = host_cpuid();
	cpu_filter_cpuid(c, true);
	assert_withheld(c);
	assert_int_equal(leaf(c, 1)->ecx, B(30) | NATIVE_1_ECX); /* no SSE3, SSE4.2, POPCNT */
	assert_int_equal(leaf(c, 7)->ebx, B(18));                /* no BMI1, BMI2, ADX */
	free(c);
	/* Where KVM emulates guest code: the baseline only. */
	c = host_cpuid();
	cpu_filter_cpuid(c, false);
	assert_withheld(c);
	assert_int_equal(leaf(c, 1)->ecx, B(30));
	assert_int_equal(leaf(c, 7)->ebx, B(18));
	free(c);
	/* Nothing is added: a host without them gives none of them. */
	c = host_cpuid();
	c->entries[1].ecx &= ~NATIVE_1_ECX;
	cpu_filter_cpuid(c, true);
	assert_int_equal(leaf(c, 1)->ecx, B(30));
	assert_int_equal(leaf(c, 7)->ebx, B(18));
	free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_guest_memfd),
		cmocka_unit_test(test_private_only),
		cmocka_unit_test(test_mappable),
		cmocka_unit_test(test_no_direct_map_host),
		cmocka_unit_test(test_select),
		cmocka_unit_test(test_efault_on_secret),
		cmocka_unit_test(test_emulation_diagnosis),
		cmocka_unit_test(test_hlt_diagnosis),
		cmocka_unit_test(test_shutdown_diagnosis),
		cmocka_unit_test(test_steps_over_intercepts),
		cmocka_unit_test(test_cpuid_filter),
	};
	return cmocka_run_group_tests_name("host_paths", tests, NULL, NULL);
}

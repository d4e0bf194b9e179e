/* SPDX-License-Identifier: ISC */
/* The vCPU's entry state; see cpu.h. */
#include "cpu.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "cloak/abi.h"
#include "kvm/kvm_compat.h"
#include "x86.h"

/* GDT selectors (layout written by write_tables()). */
#define SEL_CODE64 8
#define SEL_DATA 16
#define SEL_TSS 24
#define TSS_LIMIT 0x67
#define TSS_IST1_OFFSET 0x24

/*
 * CPUID: the leaves a cloak guest may read, and the bits of each it keeps.
 * A guest is a freestanding x86-64 program: it needs the baseline the
 * compiler assumes, NX (the monitor maps data no-execute), the TSC, and
 * RDRAND/RDSEED for entropy. Everything else, the host's virtualization
 * features (VMX, SVM) and KVM's own leaves above all, is withheld: a guest
 * has no use for it and it says more about the host than guests need.
 *
 * Where KVM runs guest code on the CPU (VMX, SVM), a guest also sees, if
 * the host's KVM offers them, the four bits BearSSL's hardware AES and
 * GHASH code checks or uses (native_ext below): AES and SSE4.1 for
 * aes_x86ni, PCLMULQDQ and SSSE3 for ghash_pclmul, both constant-time as
 * the portable aes_ct and ghash_ctmul64 are. The PKCS#11 token also
 * takes SSSE3 as its sign that OpenSSL's SSE code may run (p11_ossl.h):
 * it signs on OpenSSL only then. No other extension has a
 * user in the guests (Debian's GMP and Nettle, as the guests link them,
 * choose nothing by CPUID), so none is shown; nothing that needs XCR0
 * (AVX, XSAVE, OSXSAVE) ever. Where KVM emulates guest code its emulator
 * runs none of these instructions (SSE arithmetic ends the guest there),
 * so the guest sees the baseline only and BearSSL keeps its portable code.
 */
#define LEAF_MAX_BASIC 7u
#define LEAF_MAX_EXT 0x80000008u
struct cpuid_keep {
	uint32_t function;
	uint32_t eax, ebx, ecx, edx; /* masks */
};
#define ALL 0xffffffffu
#define BIT(n) (1u << (n))
static const struct cpuid_keep keep[] = {
	/* vendor string; eax (the highest leaf) is clamped below */
	{ 0x0, ALL, ALL, ALL, ALL },
	/* family/model/stepping; CLFLUSH line size; RDRAND; baseline:
	 * FPU, TSC, PAE, CX8, CMOV, PAT, CLFSH, MMX, FXSR, SSE, SSE2 */
	{ 0x1, ALL, 0xff00u, BIT(30),
	  BIT(0) | BIT(4) | BIT(6) | BIT(8) | BIT(15) | BIT(16) | BIT(19) | BIT(23) |
		  BIT(24) | BIT(25) | BIT(26) },
	/* structured features, subleaf 0: RDSEED (eax: no subleaves) */
	{ 0x7, 0, BIT(18), 0, 0 },
	/* the highest extended leaf (clamped below), vendor string */
	{ 0x80000000u, ALL, ALL, ALL, ALL },
	/* NX and long mode */
	{ 0x80000001u, 0, 0, 0, BIT(20) | BIT(29) },
	/* invariant TSC */
	{ 0x80000007u, 0, 0, 0, BIT(8) },
	/* physical and linear address sizes */
	{ 0x80000008u, 0xffffu, 0, 0, 0 },
};
/* Kept besides, where the CPU runs guest code (above). */
static const struct cpuid_keep native_ext[] = {
	/* PCLMULQDQ, SSSE3, SSE4.1, AES */
	{ 0x1, 0, 0, BIT(1) | BIT(9) | BIT(19) | BIT(25), 0 },
};

static const struct cpuid_keep *find_in(const struct cpuid_keep *t, size_t n, uint32_t function)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].function == function)
			return &t[i];
	return NULL;
}

void cpu_filter_cpuid(struct kvm_cpuid2 *c, bool native_cpu)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < c->nent; i++) {
		struct kvm_cpuid_entry2 e = c->entries[i];
		const struct cpuid_keep *k = find_in(keep, sizeof keep / sizeof keep[0], e.function);
		if (!k || (e.function == 0x7 && e.index != 0))
			continue;
		const struct cpuid_keep *x =
			native_cpu ? find_in(native_ext, sizeof native_ext / sizeof native_ext[0], e.function)
				   : NULL;
		e.eax &= k->eax | (x ? x->eax : 0);
		e.ebx &= k->ebx | (x ? x->ebx : 0);
		e.ecx &= k->ecx | (x ? x->ecx : 0);
		e.edx &= k->edx | (x ? x->edx : 0);
		if (e.function == 0x0 && e.eax > LEAF_MAX_BASIC)
			e.eax = LEAF_MAX_BASIC;
		if (e.function == 0x80000000u && e.eax > LEAF_MAX_EXT)
			e.eax = LEAF_MAX_EXT;
		c->entries[n++] = e;
	}
	c->nent = n;
}

static int set_cpuid(struct kvm_cpuid2 *c, bool native_cpu, int vcpu_fd, bool *nx, struct fail *f)
{
	cpu_filter_cpuid(c, native_cpu);
	*nx = false;
	for (uint32_t i = 0; i < c->nent; i++)
		if (c->entries[i].function == 0x80000001u)
			*nx = (c->entries[i].edx & BIT(20)) != 0;
	if (ioctl(vcpu_fd, KVM_SET_CPUID2, c) < 0)
		return fail_set(f, CLOAK_EXIT_INTERNAL, "KVM_SET_CPUID2: %s", strerror(errno));
	return 0;
}

/* Page tables, GDT and TSS into the reserved area; returns CR3 or 0. */
static uint64_t write_tables(struct guestmem *gm, const struct pt_range *image,
			     unsigned nimage, bool nx, struct fail *f)
{
	uint64_t mem = gm_size(gm);
	struct pt_spec spec = { .mem_size = mem, .ranges = image, .nranges = nimage, .nx = nx };
	size_t ptlen = pt_bytes(&spec);
	if (!ptlen || ptlen > CLOAK_GPA_GUEST_MIN - CLOAK_GPA_PAGETABLES) {
		fail_set(f, CLOAK_EXIT_BADIMAGE, "cannot build page tables for this image and "
			 "%llu bytes of memory", (unsigned long long)mem);
		return 0;
	}
	uint64_t *pt = calloc(1, ptlen);
	if (!pt) {
		fail_set(f, CLOAK_EXIT_INTERNAL, "out of memory");
		return 0;
	}
	uint64_t cr3 = pt_build(&spec, CLOAK_GPA_PAGETABLES, pt, ptlen);
	bool ok = cr3 && gm_copy_to(gm, gpa(CLOAK_GPA_PAGETABLES), pt, ptlen) == GM_OK;
	free(pt);
	/* GDT: null, 64-bit code, data, and the 16-byte TSS descriptor. */
	const uint64_t gdt[5] = {
		0, 0x00af9a000000ffffull, 0x00cf92000000ffffull,
		TSS_LIMIT | ((CLOAK_GPA_TSS & 0xffffff) << 16) | (0x89ull << 40) |
			((CLOAK_GPA_TSS >> 24 & 0xff) << 56),
		CLOAK_GPA_TSS >> 32,
	};
	/* The TSS holds only IST1: an emergency stack for #PF and #DF. */
	uint8_t tss[TSS_LIMIT + 1] = { 0 };
	uint64_t ist1 = CLOAK_GPA_IST_STACK_TOP;
	memcpy(tss + TSS_IST1_OFFSET, &ist1, sizeof ist1);
	if (!ok || gm_copy_to(gm, gpa(CLOAK_GPA_GDT), gdt, sizeof gdt) != GM_OK ||
	    gm_copy_to(gm, gpa(CLOAK_GPA_TSS), tss, sizeof tss) != GM_OK) {
		fail_set(f, CLOAK_EXIT_INTERNAL, "cannot write the page tables for %llu bytes",
			 (unsigned long long)mem);
		return 0;
	}
	return cr3;
}

static void flat_segment(struct kvm_segment *s, uint16_t sel, uint8_t type, bool code)
{
	*s = (struct kvm_segment){
		.base = 0, .limit = 0xffffffff, .selector = sel, .type = type,
		.present = 1, .dpl = 0, .s = 1, .g = 1,
		.l = code ? 1 : 0, .db = code ? 0 : 1,
	};
}

int cpu_setup(struct kvm_cpuid2 *supported, bool native_cpu, int vcpu_fd, struct guestmem *gm,
	      uint64_t entry, const struct pt_range *image, unsigned nimage, bool *nx, struct fail *f)
{
	if (set_cpuid(supported, native_cpu, vcpu_fd, nx, f))
		return -1;
	uint64_t cr3 = write_tables(gm, image, nimage, *nx, f);
	if (!cr3)
		return -1;
	struct kvm_sregs s;
	if (ioctl(vcpu_fd, KVM_GET_SREGS, &s) < 0)
		return fail_set(f, CLOAK_EXIT_INTERNAL, "KVM_GET_SREGS: %s", strerror(errno));
	flat_segment(&s.cs, SEL_CODE64, X86_SEG_TYPE_CODE_XR_ACCESSED, true);
	flat_segment(&s.ds, SEL_DATA, X86_SEG_TYPE_DATA_RW_ACCESSED, false);
	s.es = s.fs = s.gs = s.ss = s.ds;
	s.gdt.base = CLOAK_GPA_GDT;
	s.gdt.limit = 5 * 8 - 1;
	s.tr = (struct kvm_segment){ .base = CLOAK_GPA_TSS, .limit = TSS_LIMIT,
				     .selector = SEL_TSS, .type = X86_SEG_TYPE_TSS64_BUSY,
				     .present = 1 };
	s.idt.base = 0; /* the runtime installs its IDT first thing */
	s.idt.limit = 0;
	s.cr0 = X86_CR0_PE | X86_CR0_MP | X86_CR0_ET | X86_CR0_NE | X86_CR0_WP | X86_CR0_AM |
		X86_CR0_PG;
	/* OSFXSR: prebuilt libraries (BearSSL) use SSE *moves*, which hosts
	 * whose KVM emulates guest code can run; SSE arithmetic they cannot,
	 * so guests are built without it. Where the CPU runs guest code the
	 * libraries' SSE arithmetic, AES-NI and PCLMULQDQ included, runs too:
	 * none of it needs more than OSFXSR and OSXMMEXCPT. */
	s.cr4 = X86_CR4_PAE | X86_CR4_OSFXSR | X86_CR4_OSXMMEXCPT;
	s.cr3 = cr3;
	s.efer = X86_EFER_LME | X86_EFER_LMA | (*nx ? X86_EFER_NXE : 0);
	if (ioctl(vcpu_fd, KVM_SET_SREGS, &s) < 0)
		return fail_set(f, CLOAK_EXIT_INTERNAL, "KVM_SET_SREGS: %s", strerror(errno));
	struct kvm_regs regs = { .rip = entry, .rflags = X86_RFLAGS_RESERVED1,
				 .rdi = CLOAK_GPA_BOOTINFO, .rsp = CLOAK_GPA_GUEST_MIN };
	if (ioctl(vcpu_fd, KVM_SET_REGS, &regs) < 0)
		return fail_set(f, CLOAK_EXIT_INTERNAL, "KVM_SET_REGS: %s", strerror(errno));
	return 0;
}

int cpu_restart_at(int vcpu_fd, uint64_t rip)
{
	struct kvm_regs regs;
	if (ioctl(vcpu_fd, KVM_GET_REGS, &regs) != 0)
		return -1;
	regs.rip = rip;
	return ioctl(vcpu_fd, KVM_SET_REGS, &regs);
}

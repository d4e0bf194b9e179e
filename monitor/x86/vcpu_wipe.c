/* SPDX-License-Identifier: ISC */
/* The vCPU wipe; see vcpu_wipe.h. */
#include "vcpu_wipe.h"

#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

#include "cloak/abi.h"
#include "kvm/kvm_compat.h"
#include "guest_limits.h"
#include "x86.h"

/* The window's eight pages: the program, then its page tables. */
#define W CLOAK_GPA_MONITOR_WINDOW
#define W_CODE (W + 0x0000)
#define W_PML4 (W + 0x1000)
#define W_PDPT (W + 0x2000)
#define W_PD_CODE (W + 0x3000)
#define W_PD_DATA (W + 0x4000) /* four: 4 GiB of guest memory per pass */
#define DATA_PDS 4u
#define GIB (1ull << 30)
#define MIB2 (2ull << 20)
#define PASS_BYTES (DATA_PDS * GIB)
/* The program runs at 511 GiB + W: PDPT entry 511 maps the first 2 MiB of
 * guest memory there, apart from the data it zeroes at virtual 0. */
#define CODE_VA (511 * GIB + W_CODE)
#define WIPE_PORT (CLOAK_PORT_NULL + 1)
#define PASS_SECONDS 60

/* xor eax,eax; rep stosq (rdi, rcx); mov rdi,r8; mov rcx,r9; rep stosq;
 * out dx,eax; hlt; jmp to the hlt. */
static const uint8_t program[] = {
	0x31, 0xc0, 0xf3, 0x48, 0xab, 0x4c, 0x89, 0xc7, 0x4c, 0x89, 0xc9,
	0xf3, 0x48, 0xab, 0xef, 0xf4, 0xeb, 0xfd,
};

_Static_assert(CLOAK_MONITOR_WINDOW_PAGES == 4 + DATA_PDS, "window layout");
_Static_assert(PASS_BYTES == VCPU_WIPE_PASS_BYTES, "pass size");
_Static_assert(CLOAK_MEM_MAX / PASS_BYTES <= VCPU_WIPE_PASSES_MAX, "passes for the largest guest");

void vcpu_wipe_tables(uint64_t base, uint64_t t[7][512])
{
	memset(t, 0, 7 * 512 * sizeof(uint64_t));
	uint64_t *pml4 = t[0], *pdpt = t[1], *pd_code = t[2];
	const uint64_t rw = X86_PTE_P | X86_PTE_W;
	pml4[0] = W_PDPT | rw;
	for (unsigned i = 0; i < DATA_PDS; i++) {
		pdpt[i] = (W_PD_DATA + i * CLOAK_PAGE_SIZE) | rw;
		for (unsigned j = 0; j < 512; j++)
			t[3 + i][j] = (base + i * GIB + j * MIB2) | rw | X86_PTE_PS;
	}
	pdpt[511] = W_PD_CODE | rw;
	pd_code[0] = 0 | rw | X86_PTE_PS;
}

unsigned vcpu_wipe_plan(uint64_t mem, struct vcpu_wipe_pass out[VCPU_WIPE_PASSES_MAX])
{
	const uint64_t window_end = W + CLOAK_MONITOR_WINDOW_PAGES * CLOAK_PAGE_SIZE;
	unsigned n = 0;
	for (uint64_t base = 0; base < mem && n < VCPU_WIPE_PASSES_MAX; base += PASS_BYTES) {
		uint64_t len = mem - base < PASS_BYTES ? mem - base : PASS_BYTES;
		/* The first pass spares the window, which holds the program. */
		out[n++] = base ? (struct vcpu_wipe_pass){ base, 0, len, 0, 0 }
				: (struct vcpu_wipe_pass){ 0, 0, W, window_end, len - window_end };
	}
	return n;
}

static int write_tables(struct guestmem *gm, uint64_t base)
{
	static uint64_t t[7][512];
	vcpu_wipe_tables(base, t);
	return gm_copy_to(gm, gpa(W_PML4), t, sizeof t) == GM_OK ? 0 : -1;
}

static int enter(struct vcpu *v, uint64_t r1, uint64_t n1, uint64_t r2, uint64_t n2)
{
	struct kvm_sregs s;
	struct kvm_vcpu_events ev;
	if (ioctl(v->fd, KVM_GET_SREGS, &s) < 0)
		return -1;
	/* Long mode, flat segments, no interrupts, whatever state the guest
	 * left (a fault, a triple fault, a halt) and no event pending. */
	s.cs = (struct kvm_segment){ .limit = 0xffffffff, .selector = 8,
				     .type = X86_SEG_TYPE_CODE_XR_ACCESSED, .present = 1,
				     .s = 1, .l = 1, .g = 1 };
	s.ds = (struct kvm_segment){ .limit = 0xffffffff, .selector = 16,
				     .type = X86_SEG_TYPE_DATA_RW_ACCESSED, .present = 1,
				     .s = 1, .db = 1, .g = 1 };
	s.es = s.fs = s.gs = s.ss = s.ds;
	s.idt.base = 0;
	s.idt.limit = 0;
	s.cr0 = X86_CR0_PE | X86_CR0_ET | X86_CR0_NE | X86_CR0_WP | X86_CR0_PG;
	s.cr4 = X86_CR4_PAE;
	s.cr3 = W_PML4;
	s.efer = X86_EFER_LME | X86_EFER_LMA;
	memset(s.interrupt_bitmap, 0, sizeof s.interrupt_bitmap);
	if (ioctl(v->fd, KVM_SET_SREGS, &s) < 0)
		return -1;
	if (ioctl(v->fd, KVM_GET_VCPU_EVENTS, &ev) == 0) {
		memset(&ev.exception, 0, sizeof ev.exception);
		memset(&ev.interrupt, 0, sizeof ev.interrupt);
		memset(&ev.nmi, 0, sizeof ev.nmi);
		ev.flags = 0;
		ioctl(v->fd, KVM_SET_VCPU_EVENTS, &ev);
	}
	struct kvm_regs r = { .rip = CODE_VA, .rflags = X86_RFLAGS_RESERVED1, .rdi = r1,
			      .rcx = n1 / 8, .r8 = r2, .r9 = n2 / 8, .rdx = WIPE_PORT };
	return ioctl(v->fd, KVM_SET_REGS, &r);
}

/* Runs one pass to its `out`; a stop request on the way is ignored (this
 * is the way out already), but the pass has a deadline. */
static int run_pass(struct vcpu *v, struct fail *f)
{
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (ioctl(v->fd, KVM_RUN, 0) < 0) {
			if (errno != EINTR && errno != EAGAIN)
				return fail_set(f, CLOAK_EXIT_INTERNAL, "the vCPU wipe: KVM_RUN: %s",
						strerror(errno));
			v->run->immediate_exit = 0;
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (now.tv_sec - t0.tv_sec > PASS_SECONDS)
				return fail_set(f, CLOAK_EXIT_INTERNAL, "the vCPU wipe did not finish "
						"in %d s", PASS_SECONDS);
			continue;
		}
		const struct kvm_run *run = v->run;
		if (run->exit_reason == KVM_EXIT_IO && run->io.port == WIPE_PORT)
			return 0;
		return fail_set(f, CLOAK_EXIT_INTERNAL, "the vCPU wipe stopped with KVM exit %u "
				"at rip 0x%llx", run->exit_reason,
				(unsigned long long)vcpu_rip(v));
	}
}

int64_t vcpu_wipe(struct vcpu *v, struct guestmem *gm, struct fail *f)
{
	struct vcpu_wipe_pass pass[VCPU_WIPE_PASSES_MAX];
	unsigned n = vcpu_wipe_plan(gm_size(gm), pass);
	uint64_t zeroed = 0;
	if (gm_copy_to(gm, gpa(W_CODE), program, sizeof program) != GM_OK)
		return fail_set(f, CLOAK_EXIT_INTERNAL, "the vCPU wipe: no monitor window");
	for (unsigned i = 0; i < n; i++) {
		const struct vcpu_wipe_pass *p = &pass[i];
		if (write_tables(gm, p->base) || enter(v, p->r1, p->n1, p->r2, p->n2))
			return fail_set(f, CLOAK_EXIT_INTERNAL, "the vCPU wipe: cannot set up the "
					"vCPU: %s", strerror(errno));
		if (run_pass(v, f))
			return -1;
		zeroed += p->n1 + p->n2;
	}
	return (int64_t)zeroed;
}

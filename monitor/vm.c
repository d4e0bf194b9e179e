/* KVM VM and vCPU setup: long mode entered directly (no real-mode step). */
#include "vm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kvm_compat.h"
#include "pagetable.h"

#define CR0_PE (1ull << 0)
#define CR0_MP (1ull << 1)
#define CR0_ET (1ull << 4)
#define CR0_NE (1ull << 5)
#define CR0_WP (1ull << 16)
#define CR0_AM (1ull << 18)
#define CR0_PG (1ull << 31)
#define CR4_PAE (1ull << 5)
#define CR4_OSFXSR (1ull << 9)
#define CR4_OSXMMEXCPT (1ull << 10)
#define EFER_LME (1ull << 8)
#define EFER_LMA (1ull << 10)
#define EFER_NXE (1ull << 11)
#define CPUID_EXT_FEATURES 0x80000001u
#define CPUID_EDX_NX (1u << 20)

/* One line on stderr, "cloak: " first. */
static void vline(const char *fmt, va_list ap)
{
	fputs("cloak: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

int vm_fail(struct vm *vm, int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vline(fmt, ap);
	va_end(ap);
	if (!vm->stopped) {
		vm->stopped = true;
		vm->exit_status = status;
	}
	return -1;
}

void vm_verbose(const struct vm *vm, const char *fmt, ...)
{
	if (!vm->verbose)
		return;
	va_list ap;
	va_start(ap, fmt);
	vline(fmt, ap);
	va_end(ap);
}

int vm_open(struct vm *vm, char *err, size_t errlen, int *status)
{
	vm->vm_fd = vm->vcpu_fd = -1;
	*status = CLOAK_EXIT_NOHOST;
	vm->kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (vm->kvm_fd < 0) {
		if (errno == ENOENT)
			snprintf(err, errlen, "/dev/kvm does not exist: load the kvm module "
				 "(modprobe kvm_intel or kvm_amd) or run on a host with KVM");
		else
			snprintf(err, errlen, "cannot open /dev/kvm: %s: add yourself to "
				 "the kvm group or run as root", strerror(errno));
		return -1;
	}
	int api = ioctl(vm->kvm_fd, KVM_GET_API_VERSION, 0);
	if (api != KVM_API_VERSION) {
		snprintf(err, errlen, "/dev/kvm speaks KVM API %d, cloak needs %d: "
			 "use a newer kernel", api, KVM_API_VERSION);
		return -1;
	}
	vm->vm_fd = ioctl(vm->kvm_fd, KVM_CREATE_VM, 0);
	if (vm->vm_fd < 0) {
		snprintf(err, errlen, "KVM_CREATE_VM failed: %s", strerror(errno));
		return -1;
	}
	/* Intel needs a TSS area for real-mode emulation even if we never use
	 * it; harmless elsewhere. Placed just below 4 GiB, outside guest RAM. */
	ioctl(vm->vm_fd, KVM_SET_TSS_ADDR, 0xfffbd000ul);
	return 0;
}

static int set_cpuid(struct vm *vm, char *err, size_t errlen)
{
	int n = 128;
	struct kvm_cpuid2 *c = NULL;
	for (;;) {
		c = calloc(1, sizeof *c + (size_t)n * sizeof(struct kvm_cpuid_entry2));
		if (!c)
			return snprintf(err, errlen, "out of memory"), -1;
		c->nent = (uint32_t)n;
		if (ioctl(vm->kvm_fd, KVM_GET_SUPPORTED_CPUID, c) == 0)
			break;
		free(c);
		if (errno != E2BIG || n > 4096)
			return snprintf(err, errlen, "KVM_GET_SUPPORTED_CPUID: %s",
					strerror(errno)), -1;
		n *= 2;
	}
	for (uint32_t i = 0; i < c->nent; i++)
		if (c->entries[i].function == CPUID_EXT_FEATURES)
			vm->nx = (c->entries[i].edx & CPUID_EDX_NX) != 0;
	int r = ioctl(vm->vcpu_fd, KVM_SET_CPUID2, c);
	free(c);
	if (r < 0)
		return snprintf(err, errlen, "KVM_SET_CPUID2: %s", strerror(errno)), -1;
	return 0;
}

static void seg(struct kvm_segment *s, uint16_t sel, uint8_t type, bool code)
{
	*s = (struct kvm_segment){
		.base = 0, .limit = 0xffffffff, .selector = sel, .type = type,
		.present = 1, .dpl = 0, .s = 1, .g = 1,
		.l = code ? 1 : 0, .db = code ? 0 : 1,
	};
}

static int set_long_mode(struct vm *vm, uint64_t entry, const struct pt_range *image,
			 unsigned nimage, char *err, size_t errlen)
{
	uint64_t mem = gm_size(vm->gm);
	struct pt_spec spec = { .mem_size = mem, .ranges = image, .nranges = nimage,
				.nx = vm->nx };
	size_t ptlen = pt_bytes(&spec);
	if (!ptlen || ptlen > CLOAK_GPA_GUEST_MIN - CLOAK_GPA_PAGETABLES)
		return snprintf(err, errlen, "cannot build page tables for this image and "
				"%llu bytes of memory", (unsigned long long)mem), -1;
	uint64_t *pt = calloc(1, ptlen);
	if (!pt)
		return snprintf(err, errlen, "out of memory"), -1;
	uint64_t cr3 = pt_build(&spec, CLOAK_GPA_PAGETABLES, pt, ptlen);
	int r = cr3 && gm_copy_to(vm->gm, gpa(CLOAK_GPA_PAGETABLES), pt, ptlen) == GM_OK;
	free(pt);
	/* GDT: null, 64-bit code (selector 8), data (selector 16), and the
	 * 16-byte TSS descriptor (selector 24) that TR names. */
	const uint64_t tss_limit = 0x67;
	const uint64_t gdt[5] = {
		0, 0x00af9a000000ffffull, 0x00cf92000000ffffull,
		tss_limit | ((CLOAK_GPA_TSS & 0xffffff) << 16) | (0x89ull << 40) |
			((CLOAK_GPA_TSS >> 24 & 0xff) << 56),
		CLOAK_GPA_TSS >> 32,
	};
	/* The TSS holds only IST1: an emergency stack for #PF and #DF. */
	uint8_t tss[0x68] = { 0 };
	uint64_t ist1 = CLOAK_GPA_IST_STACK_TOP;
	memcpy(tss + 0x24, &ist1, sizeof ist1);
	if (!r || gm_copy_to(vm->gm, gpa(CLOAK_GPA_GDT), gdt, sizeof gdt) != GM_OK ||
	    gm_copy_to(vm->gm, gpa(CLOAK_GPA_TSS), tss, sizeof tss) != GM_OK)
		return snprintf(err, errlen, "cannot build page tables for %llu bytes",
				(unsigned long long)mem), -1;

	struct kvm_sregs s;
	if (ioctl(vm->vcpu_fd, KVM_GET_SREGS, &s) < 0)
		return snprintf(err, errlen, "KVM_GET_SREGS: %s", strerror(errno)), -1;
	seg(&s.cs, 8, 11, true);
	seg(&s.ds, 16, 3, false);
	s.es = s.fs = s.gs = s.ss = s.ds;
	s.gdt.base = CLOAK_GPA_GDT;
	s.gdt.limit = sizeof gdt - 1;
	s.tr = (struct kvm_segment){ .base = CLOAK_GPA_TSS, .limit = (uint32_t)tss_limit,
				     .selector = 24, .type = 11, .present = 1 };
	s.idt.base = 0; /* the runtime installs its IDT first thing */
	s.idt.limit = 0;
	s.cr0 = CR0_PE | CR0_MP | CR0_ET | CR0_NE | CR0_WP | CR0_AM | CR0_PG;
	/* OSFXSR: SSE *moves* work under the emulator and prebuilt libraries
	 * (BearSSL) use them; SSE arithmetic does not, so guests avoid it. */
	s.cr4 = CR4_PAE | CR4_OSFXSR | CR4_OSXMMEXCPT;
	s.cr3 = cr3;
	s.efer = EFER_LME | EFER_LMA | (vm->nx ? EFER_NXE : 0);
	if (ioctl(vm->vcpu_fd, KVM_SET_SREGS, &s) < 0)
		return snprintf(err, errlen, "KVM_SET_SREGS: %s", strerror(errno)), -1;

	struct kvm_regs regs = { .rip = entry, .rflags = 2, .rdi = CLOAK_GPA_BOOTINFO,
				 .rsp = CLOAK_GPA_GUEST_MIN };
	if (ioctl(vm->vcpu_fd, KVM_SET_REGS, &regs) < 0)
		return snprintf(err, errlen, "KVM_SET_REGS: %s", strerror(errno)), -1;
	return 0;
}

static int set_memslot(struct vm *vm, char *err, size_t errlen)
{
	struct gm_slot sl;
	gm_slot(vm->gm, &sl);
	int r;
	if (sl.guest_memfd >= 0) {
		struct kvm_userspace_memory_region2 m = {
			.slot = 0, .flags = KVM_MEM_GUEST_MEMFD, .guest_phys_addr = 0,
			.memory_size = sl.size, .userspace_addr = sl.userspace_addr,
			.guest_memfd = (uint32_t)sl.guest_memfd,
			.guest_memfd_offset = sl.guest_memfd_offset,
		};
		r = ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION2, &m);
	} else {
		struct kvm_userspace_memory_region m = {
			.slot = 0, .guest_phys_addr = 0, .memory_size = sl.size,
			.userspace_addr = sl.userspace_addr,
		};
		r = ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &m);
	}
	if (r < 0)
		return snprintf(err, errlen, "cannot register guest memory with KVM: %s",
				strerror(errno)), -1;
	return 0;
}

int vm_setup(struct vm *vm, uint64_t entry, const struct pt_range *image, unsigned nimage,
	     char *err, size_t errlen, int *status)
{
	*status = CLOAK_EXIT_INTERNAL;
	if (set_memslot(vm, err, errlen))
		return -1;
	vm->vcpu_fd = ioctl(vm->vm_fd, KVM_CREATE_VCPU, 0);
	if (vm->vcpu_fd < 0)
		return snprintf(err, errlen, "KVM_CREATE_VCPU: %s", strerror(errno)), -1;
	int sz = ioctl(vm->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (sz < (int)sizeof(struct kvm_run))
		return snprintf(err, errlen, "KVM_GET_VCPU_MMAP_SIZE: %s", strerror(errno)), -1;
	vm->run_size = (size_t)sz;
	vm->run = mmap(NULL, vm->run_size, PROT_READ | PROT_WRITE, MAP_SHARED, vm->vcpu_fd, 0);
	if (vm->run == MAP_FAILED) {
		vm->run = NULL;
		return snprintf(err, errlen, "cannot map kvm_run: %s", strerror(errno)), -1;
	}
	if (set_cpuid(vm, err, errlen) || set_long_mode(vm, entry, image, nimage, err, errlen))
		return -1;
	int khz = ioctl(vm->vcpu_fd, KVM_GET_TSC_KHZ, 0);
	vm->tsc_khz = khz > 0 ? (uint64_t)khz : 0;
	if (!vm->tsc_khz)
		return snprintf(err, errlen, "KVM_GET_TSC_KHZ failed: guests need a TSC "
				"frequency for time"), -1;
	return 0;
}

void vm_close(struct vm *vm)
{
	if (vm->run)
		munmap(vm->run, vm->run_size);
	if (vm->vcpu_fd >= 0)
		close(vm->vcpu_fd);
	if (vm->vm_fd >= 0)
		close(vm->vm_fd);
	if (vm->kvm_fd >= 0)
		close(vm->kvm_fd);
	vm->run = NULL;
	vm->vcpu_fd = vm->vm_fd = vm->kvm_fd = -1;
}

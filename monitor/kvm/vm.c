/* SPDX-License-Identifier: ISC */
/* The VM's KVM objects: memslot, vCPU, its run structure. */
#include "vm.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kvm_compat.h"
#include "x86/cpu.h"

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

void vm_count_calls(const struct vm *vm)
{
	uint64_t total = 0;
	for (unsigned i = 0; i < CLOAK_HC_MAX; i++)
		total += vm->hc_calls[i];
	vm_verbose(vm, "%llu calls, %llu refused, %llu guest-memory accesses refused",
		   (unsigned long long)total, (unsigned long long)vm->hc_refused,
		   (unsigned long long)gm_refused(vm->gm));
}

uint64_t vm_guest_rip(const struct vm *vm)
{
	struct kvm_regs r;
	return ioctl(vm->vcpu_fd, KVM_GET_REGS, &r) == 0 ? r.rip : 0;
}

static int set_memslot(struct vm *vm, struct fail *f)
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
		r = ioctl(vm->kvm.vm_fd, KVM_SET_USER_MEMORY_REGION2, &m);
	} else {
		struct kvm_userspace_memory_region m = {
			.slot = 0, .guest_phys_addr = 0, .memory_size = sl.size,
			.userspace_addr = sl.userspace_addr,
		};
		r = ioctl(vm->kvm.vm_fd, KVM_SET_USER_MEMORY_REGION, &m);
	}
	if (r < 0)
		return fail_set(f, CLOAK_EXIT_NOHOST, "cannot register guest memory with KVM: %s",
				strerror(errno));
	return 0;
}

int vm_setup(struct vm *vm, uint64_t entry, const struct pt_range *image, unsigned nimage,
	     struct fail *f)
{
	if (set_memslot(vm, f))
		return -1;
	/* Where KVM offers it, an emulation failure comes with the bytes it
	 * could not decode, so the monitor never has to read them itself. */
	struct kvm_enable_cap cap = { .cap = KVM_CAP_EXIT_ON_EMULATION_FAILURE, .args = { 1 } };
	ioctl(vm->kvm.vm_fd, KVM_ENABLE_CAP, &cap);
	vm->vcpu_fd = ioctl(vm->kvm.vm_fd, KVM_CREATE_VCPU, 0);
	if (vm->vcpu_fd < 0)
		return fail_set(f, CLOAK_EXIT_INTERNAL, "KVM_CREATE_VCPU: %s", strerror(errno));
	int sz = ioctl(vm->kvm.kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (sz < (int)sizeof(struct kvm_run))
		return fail_set(f, CLOAK_EXIT_INTERNAL, "KVM_GET_VCPU_MMAP_SIZE: %s",
				strerror(errno));
	vm->run_size = (size_t)sz;
	vm->run = mmap(NULL, vm->run_size, PROT_READ | PROT_WRITE, MAP_SHARED, vm->vcpu_fd, 0);
	if (vm->run == MAP_FAILED) {
		vm->run = NULL;
		return fail_set(f, CLOAK_EXIT_INTERNAL, "cannot map kvm_run: %s", strerror(errno));
	}
	/* Where KVM offers it, every exit brings the vCPU's registers along
	 * (KVM_CAP_SYNC_REGS, a copy in kvm_run, no extra call): the monitor
	 * then knows where the guest last left it, which kvm_amd erases on a
	 * triple fault (kvm/run.c). */
	int sync = ioctl(vm->kvm.vm_fd, KVM_CHECK_EXTENSION, KVM_CAP_SYNC_REGS);
	if (sync > 0 && (sync & KVM_SYNC_X86_REGS))
		vm->run->kvm_valid_regs = KVM_SYNC_X86_REGS;
	struct kvm_cpuid2 *supported = cpuid_query_take(&vm->kvm.cpuid);
	if (!supported)
		return fail_set(f, CLOAK_EXIT_INTERNAL, "KVM_GET_SUPPORTED_CPUID: %s",
				strerror(errno));
	int r = cpu_setup(supported, vm->vcpu_fd, vm->gm, entry, image, nimage, &vm->nx, f);
	free(supported);
	if (r)
		return -1;
	int khz = ioctl(vm->vcpu_fd, KVM_GET_TSC_KHZ, 0);
	vm->tsc_khz = khz > 0 ? (uint64_t)khz : 0;
	if (!vm->tsc_khz)
		return fail_set(f, CLOAK_EXIT_NOHOST, "KVM_GET_TSC_KHZ failed: guests need a TSC "
				"frequency for time");
	return 0;
}

void vm_close(struct vm *vm)
{
	if (vm->run)
		munmap(vm->run, vm->run_size);
	if (vm->vcpu_fd >= 0)
		close(vm->vcpu_fd);
	kvm_close(&vm->kvm);
	vm->run = NULL;
	vm->vcpu_fd = -1;
}

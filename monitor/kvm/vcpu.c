/* SPDX-License-Identifier: ISC */
/* The vCPU and its memory slot; see vcpu.h. */
#include "vcpu.h"

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

uint64_t vcpu_rip(const struct vcpu *v)
{
	struct kvm_regs r;
	return ioctl(v->fd, KVM_GET_REGS, &r) == 0 ? r.rip : 0;
}

static int set_memslot(int vm_fd, struct guestmem *gm, struct fail *f)
{
	struct gm_slot sl;
	gm_slot(gm, &sl);
	int r;
	if (sl.guest_memfd >= 0) {
		struct kvm_userspace_memory_region2 m = {
			.slot = 0, .flags = KVM_MEM_GUEST_MEMFD, .guest_phys_addr = 0,
			.memory_size = sl.size, .userspace_addr = sl.userspace_addr,
			.guest_memfd = (uint32_t)sl.guest_memfd,
			.guest_memfd_offset = sl.guest_memfd_offset,
		};
		r = ioctl(vm_fd, KVM_SET_USER_MEMORY_REGION2, &m);
	} else {
		struct kvm_userspace_memory_region m = {
			.slot = 0, .guest_phys_addr = 0, .memory_size = sl.size,
			.userspace_addr = sl.userspace_addr,
		};
		r = ioctl(vm_fd, KVM_SET_USER_MEMORY_REGION, &m);
	}
	if (r < 0)
		return fail_set(f, CLOAK_EXIT_NOHOST, "cannot register guest memory with KVM: %s",
				strerror(errno));
	return 0;
}

int vcpu_setup(struct vcpu *v, struct kvm_host *k, struct guestmem *gm, uint64_t entry,
	       const struct pt_range *image, unsigned nimage, struct fail *f)
{
	if (set_memslot(k->vm_fd, gm, f))
		return -1;
	/* Where KVM offers it, an emulation failure comes with the bytes it
	 * could not decode, so the monitor never has to read them itself. */
	struct kvm_enable_cap cap = { .cap = KVM_CAP_EXIT_ON_EMULATION_FAILURE, .args = { 1 } };
	ioctl(k->vm_fd, KVM_ENABLE_CAP, &cap);
	v->fd = ioctl(k->vm_fd, KVM_CREATE_VCPU, 0);
	if (v->fd < 0)
		return fail_set(f, CLOAK_EXIT_INTERNAL, "KVM_CREATE_VCPU: %s", strerror(errno));
	int sz = ioctl(k->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (sz < (int)sizeof(struct kvm_run))
		return fail_set(f, CLOAK_EXIT_INTERNAL, "KVM_GET_VCPU_MMAP_SIZE: %s",
				strerror(errno));
	v->run_size = (size_t)sz;
	v->run = mmap(NULL, v->run_size, PROT_READ | PROT_WRITE, MAP_SHARED, v->fd, 0);
	if (v->run == MAP_FAILED) {
		v->run = NULL;
		return fail_set(f, CLOAK_EXIT_INTERNAL, "cannot map kvm_run: %s", strerror(errno));
	}
	/* Where KVM offers it, every exit brings the vCPU's registers along
	 * (KVM_CAP_SYNC_REGS, a copy in kvm_run, no extra call): the monitor
	 * then knows where the guest last left it, which kvm_amd erases on a
	 * triple fault (runner/run.c). */
	int sync = ioctl(k->vm_fd, KVM_CHECK_EXTENSION, KVM_CAP_SYNC_REGS);
	if (sync > 0 && (sync & KVM_SYNC_X86_REGS))
		v->run->kvm_valid_regs = KVM_SYNC_X86_REGS;
	struct kvm_cpuid2 *supported = cpuid_query_take(&k->cpuid);
	if (!supported)
		return fail_set(f, CLOAK_EXIT_INTERNAL, "KVM_GET_SUPPORTED_CPUID: %s",
				strerror(errno));
	int r = cpu_setup(supported, kvm_host_hw_virt(), v->fd, gm, entry, image, nimage, &v->nx, f);
	free(supported);
	if (r)
		return -1;
	int khz = ioctl(v->fd, KVM_GET_TSC_KHZ, 0);
	v->tsc_khz = khz > 0 ? (uint64_t)khz : 0;
	if (!v->tsc_khz)
		return fail_set(f, CLOAK_EXIT_NOHOST, "KVM_GET_TSC_KHZ failed: guests need a TSC "
				"frequency for time");
	return 0;
}

void vcpu_close(struct vcpu *v)
{
	if (v->run)
		munmap(v->run, v->run_size);
	if (v->fd >= 0)
		close(v->fd);
	v->run = NULL;
	v->fd = -1;
}

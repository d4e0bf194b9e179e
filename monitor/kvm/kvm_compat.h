/* SPDX-License-Identifier: ISC */
/*
 * KVM uapi that Debian 12's 6.1 headers lack. Values are the kernel's uapi
 * ones (stable once merged); every one is guarded so newer headers win.
 */
#ifndef CLOAK_KVM_COMPAT_H
#define CLOAK_KVM_COMPAT_H

#include <linux/kvm.h>
#include <stdint.h>

#ifndef KVM_CAP_EXIT_HYPERCALL
#define KVM_CAP_EXIT_HYPERCALL 201
#endif
#ifndef KVM_CAP_USER_MEMORY2
#define KVM_CAP_USER_MEMORY2 231
#endif
#ifndef KVM_CAP_MEMORY_FAULT_INFO
#define KVM_CAP_MEMORY_FAULT_INFO 232
#endif
#ifndef KVM_CAP_MEMORY_ATTRIBUTES
#define KVM_CAP_MEMORY_ATTRIBUTES 233
#endif
#ifndef KVM_CAP_GUEST_MEMFD
#define KVM_CAP_GUEST_MEMFD 234
#endif
#ifndef KVM_CAP_VM_TYPES
#define KVM_CAP_VM_TYPES 235
#endif
#ifndef KVM_CAP_PRE_FAULT_MEMORY
#define KVM_CAP_PRE_FAULT_MEMORY 236
#endif
#ifndef KVM_CAP_GUEST_MEMFD_FLAGS
#define KVM_CAP_GUEST_MEMFD_FLAGS 244
#endif

#ifndef KVM_MEM_GUEST_MEMFD
#define KVM_MEM_GUEST_MEMFD (1u << 2)
struct kvm_userspace_memory_region2 {
	uint32_t slot;
	uint32_t flags;
	uint64_t guest_phys_addr;
	uint64_t memory_size;
	uint64_t userspace_addr;
	uint64_t guest_memfd_offset;
	uint32_t guest_memfd;
	uint32_t pad1;
	uint64_t pad2[14];
};
#define KVM_SET_USER_MEMORY_REGION2 _IOW(KVMIO, 0x49, struct kvm_userspace_memory_region2)
#endif

#ifndef KVM_CREATE_GUEST_MEMFD
struct kvm_create_guest_memfd {
	uint64_t size;
	uint64_t flags;
	uint64_t reserved[6];
};
#define KVM_CREATE_GUEST_MEMFD _IOWR(KVMIO, 0xd4, struct kvm_create_guest_memfd)
#endif
#ifndef GUEST_MEMFD_FLAG_MMAP
#define GUEST_MEMFD_FLAG_MMAP (1ull << 0)
#endif
#ifndef GUEST_MEMFD_FLAG_INIT_SHARED
#define GUEST_MEMFD_FLAG_INIT_SHARED (1ull << 1)
#endif
/* Proposed upstream, not merged as of 2026-09: probe before use. */
#define CLOAK_GUEST_MEMFD_FLAG_NO_DIRECT_MAP (1ull << 2)

#ifndef KVM_EXIT_MEMORY_FAULT
#define KVM_EXIT_MEMORY_FAULT 39
#endif

#endif

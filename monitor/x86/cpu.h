/* SPDX-License-Identifier: ISC */
/*
 * The vCPU's x86 state at entry: CPUID (only what guests use), the GDT
 * and TSS in the reserved area, the identity-mapped page tables, and long
 * mode entered directly through KVM_SET_SREGS (no real-mode step).
 */
#ifndef CLOAK_X86_CPU_H
#define CLOAK_X86_CPU_H

#include <stdbool.h>
#include <stdint.h>

#include "fail.h"
#include "mem/guestmem.h"
#include "pagetable.h"

struct kvm_cpuid2;

/* Keeps only the CPUID leaves and bits a cloak guest has use for (see
 * cpu.c): no virtualization features, no hypervisor leaves; the
 * extensions BearSSL's hardware AES and GHASH need (AES, PCLMULQDQ,
 * SSSE3, SSE4.1) only where native_cpu says that the CPU runs
 * guest code (VMX, SVM), never AVX or XSAVE. Pure. */
void cpu_filter_cpuid(struct kvm_cpuid2 *c, bool native_cpu);

/* Sets CPUID from what KVM supports (`supported`, filtered in place;
 * native_cpu: KVM runs guest code on the CPU), writes GDT, TSS and page
 * tables into guest memory, and enters long mode at `entry` with %rdi =
 * boot info. *nx tells whether data pages are no-execute. */
int cpu_setup(struct kvm_cpuid2 *supported, bool native_cpu, int vcpu_fd, struct guestmem *gm,
	      uint64_t entry, const struct pt_range *image, unsigned nimage, bool *nx, struct fail *f);

/* Points the vCPU at `rip` again, other state unchanged (cloak check runs
 * its probe guest twice). */
int cpu_restart_at(int vcpu_fd, uint64_t rip);

#endif

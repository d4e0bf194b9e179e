/* SPDX-License-Identifier: ISC */
/*
 * /dev/kvm and the VM: the one place that opens KVM and creates a VM, for
 * the run path and for `cloak check` alike, so a missing or forbidden
 * /dev/kvm gets the same message everywhere.
 */
#ifndef CLOAK_KVM_KVM_H
#define CLOAK_KVM_KVM_H

#include <stdbool.h>
#include <stddef.h>

#include "cpuid_query.h"
#include "fail.h"

struct kvm_host {
	int kvm_fd; /* /dev/kvm */
	int vm_fd;  /* a default VM (KVM_X86_DEFAULT_VM), no memory yet */
	int api;    /* KVM_GET_API_VERSION */
	struct cpuid_query cpuid; /* the supported CPUID, asked early by a run */
};

/* Opens /dev/kvm and creates a VM; -1 with a one-line reason and the fix
 * in *f (CLOAK_EXIT_NOHOST). Both descriptors are -1 on failure. */
int kvm_open(struct kvm_host *k, struct fail *f);
void kvm_close(struct kvm_host *k);

/* Whether the host CPU (as this process sees it) offers hardware
 * virtualization (VMX or SVM): then KVM runs guest code natively and
 * faults guest pages in with GUP; without it, the KVM seen here emulates
 * guest code and reads guest memory through the monitor's mapping. */
bool kvm_host_hw_virt(void);

/* Whether KVM steps over the guest instructions it intercepts (cpuid,
 * hlt, rdmsr...) without reading guest memory: VMX reports each
 * instruction's length, SVM only with next-RIP save (kvm_amd's nrips
 * parameter). Without it KVM decodes the instruction from guest memory,
 * so a monitor that has given that memory up would stop the guest at its
 * first cpuid. false with the reason in why where it cannot. */
bool kvm_steps_without_guest_reads(char *why, size_t len);
/* The decision alone: vmx, and kvm_amd's nrips parameter as read (NULL
 * when there is none). */
bool kvm_steps_over_intercepts(bool vmx, const char *nrips, char *why, size_t len);

/* One line on what this KVM offers cloak (--verbose, cloak check). */
void kvm_describe(const struct kvm_host *k, char *buf, size_t len);

#endif

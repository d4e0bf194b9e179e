/* SPDX-License-Identifier: ISC */
/*
 * KVM_GET_SUPPORTED_CPUID, asked early on a thread of its own. KVM answers
 * it by running CPUID for each of some 60 leaves; where the host is itself
 * a guest (nested virtualization, as on the project's machines) each CPUID
 * traps to the outer hypervisor (~8 µs), and the query takes ~0.43 ms,
 * the costliest single step of a boot. Nothing it returns depends on the
 * VM, so it can run while the VM, guest memory and the image are set up.
 */
#ifndef CLOAK_KVM_CPUID_QUERY_H
#define CLOAK_KVM_CPUID_QUERY_H

#include <pthread.h>
#include <stdbool.h>

struct kvm_cpuid2;

struct cpuid_query {
	int kvm_fd;
	bool running;		/* a thread was started and not yet joined */
	pthread_t thread;
	struct kvm_cpuid2 *result; /* the thread's answer, or NULL with err */
	int err;
};

/* Starts the query on kvm_fd. Never fails: without a thread the query is
 * asked when taken. All signals are blocked in the thread, so stop
 * requests reach the main thread only. */
void cpuid_query_start(struct cpuid_query *q, int kvm_fd);

/* The supported CPUID (the caller frees it), or NULL with errno set. Asks
 * KVM itself when no thread was started. */
struct kvm_cpuid2 *cpuid_query_take(struct cpuid_query *q);

/* Joins a thread still running and frees what was not taken. */
void cpuid_query_end(struct cpuid_query *q);

#endif

/* SPDX-License-Identifier: ISC */
/*
 * One virtual machine with one vCPU: the KVM objects, the guest's memory
 * and the state the call handlers share.
 */
#ifndef CLOAK_KVM_VM_H
#define CLOAK_KVM_VM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cloak/abi.h"
#include "fail.h"
#include "kvm.h"
#include "mem/guestmem.h"

struct devices; /* block devices and channels (devices/registry.h) */
struct pt_range;

struct vm {
	struct kvm_host kvm;
	int vcpu_fd;
	struct kvm_run *run;
	size_t run_size;
	struct guestmem *gm;
	uint64_t tsc_khz;
	bool nx; /* the vCPU has NX: data pages are no-execute */
	bool verbose, quiet;
	bool no_sandbox; /* --no-sandbox: no seccomp filter in either process */
	bool stopped; /* a handler ended the VM; exit_status is set */
	int exit_status;
	struct devices *dev;
	uint64_t hc_calls[CLOAK_HC_MAX];
	uint64_t hc_refused; /* calls answered with an error */
	/* The guest's rip at the last exit the monitor handled, where KVM
	 * brings registers along with each exit (KVM_CAP_SYNC_REGS); else 0. */
	uint64_t last_rip;
	/* Calls are the device process's (process/split.h), unless
	 * --no-device-isolation. */
	bool split;
};

/* Ends the VM while it runs: one line on stderr ("cloak: ..."), the VM
 * marked stopped with `status` (the first reason wins). Always returns -1
 * so handlers can `return vm_fail(...)`. */
int vm_fail(struct vm *vm, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Informational line, only with --verbose. */
void vm_verbose(const struct vm *vm, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Registers guest memory as memslot 0, creates the vCPU, and sets its
 * entry state (x86/cpu.h) at `entry`. */
int vm_setup(struct vm *vm, uint64_t entry, const struct pt_range *image, unsigned nimage,
	     struct fail *f);
void vm_close(struct vm *vm);

/* With --verbose: the calls made, refused, and guest accesses refused. */
void vm_count_calls(const struct vm *vm);

/* The guest's rip, or 0 if KVM cannot say (for messages). */
uint64_t vm_guest_rip(const struct vm *vm);

#endif

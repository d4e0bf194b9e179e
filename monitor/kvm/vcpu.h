/* SPDX-License-Identifier: ISC */
/*
 * The VM's one vCPU and its memory slot: made by the vCPU runner after the
 * device process has left (runner/), and by `cloak check`'s KVM probe.
 */
#ifndef CLOAK_KVM_VCPU_H
#define CLOAK_KVM_VCPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fail.h"
#include "kvm.h"
#include "mem/guestmem.h"

struct pt_range;

struct vcpu {
	int fd;
	struct kvm_run *run;
	size_t run_size;
	uint64_t tsc_khz;
	bool nx; /* the vCPU has NX: data pages are no-execute */
};

/* Registers guest memory as memslot 0 of k's VM, creates the vCPU, and
 * sets its entry state (x86/cpu.h) at `entry`. On failure *v holds what
 * was made, for vcpu_close(). */
int vcpu_setup(struct vcpu *v, struct kvm_host *k, struct guestmem *gm, uint64_t entry,
	       const struct pt_range *image, unsigned nimage, struct fail *f);
void vcpu_close(struct vcpu *v);

/* The guest's rip, or 0 if KVM cannot say (for messages). */
uint64_t vcpu_rip(const struct vcpu *v);

#endif

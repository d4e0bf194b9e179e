/* SPDX-License-Identifier: ISC */
/*
 * The vCPU runner (docs/design.md, "Two processes"): the monitor process
 * that owns the VM. It holds KVM, the vCPU and guest memory with its
 * descriptor, runs KVM_RUN, answers the calls that carry no host input
 * (calls/calls.h), decodes the guest's memory calls and tells the device
 * process what they changed, gives memory up where the kernel allows, does
 * both wipes and answers stop requests. Every call that reaches a device
 * it hands to the device process (device_link.h), or, with
 * --no-device-isolation, to the device code in this same process.
 */
#ifndef CLOAK_RUNNER_RUNNER_H
#define CLOAK_RUNNER_RUNNER_H

#include <stdbool.h>
#include <stdint.h>

#include "calls/calls.h"
#include "kvm/kvm.h"
#include "kvm/vcpu.h"
#include "mem/guestmem.h"
#include "outcome.h"

struct device;
struct device_link;

struct runner {
	struct kvm_host kvm;
	struct vcpu vcpu;
	struct guestmem *gm;
	struct outcome out;
	struct call_counts counts;
	/* The guest's rip at the last exit the runner handled, where KVM
	 * brings registers along with each exit (KVM_CAP_SYNC_REGS); else 0. */
	uint64_t last_rip;
	/* Who answers the device calls: the device process, or (one process,
	 * --no-device-isolation) the device code here. Exactly one is set. */
	struct device_link *link;
	struct device *local;
};

/* Runs the vCPU until the guest exits, aborts, breaks the ABI, or a stop
 * request ends it; returns the monitor's exit status (run.c). */
int runner_run(struct runner *r);
/* One port I/O exit of the guest, an outl of `value` to `port`: answered
 * here or handed on (run.c). 0 to resume the guest, -1 if the VM ended. */
int runner_call(struct runner *r, uint16_t port, unsigned size, uint32_t value);

/* The handlers of the runner's own calls (own_calls.c). */
int rc_nop(struct runner *r, struct cloak_hc_nop *a);
int rc_exit(struct runner *r, struct cloak_hc_exit *a);
int rc_abort(struct runner *r, struct cloak_hc_abort *a);
int rc_walltime(struct runner *r, struct cloak_hc_walltime *a);
int rc_random(struct runner *r, struct cloak_hc_random *a);
int rc_protect(struct runner *r, struct cloak_hc_protect *a);
int rc_share(struct runner *r, struct cloak_hc_share *a);
int rc_unshare(struct runner *r, struct cloak_hc_share *a);
/* POLL is the device process's, but one with a zero timeout is answered
 * here from the readiness page it keeps (handoff/handoff.h): true when it
 * was (or the VM ended: r->out), false to hand the call on. */
bool rc_poll_now(struct runner *r, uint32_t value);

#endif

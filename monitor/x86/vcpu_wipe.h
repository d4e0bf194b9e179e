/* SPDX-License-Identifier: ISC */
/*
 * The vCPU wipe: zeroing guest memory the monitor no longer maps. Once the
 * monitor has given guest memory up (mem/guestmem.h), it cannot zero the
 * private pages itself, and guest_memfd pages are not zeroed when the
 * kernel frees them. So at the end the monitor writes a few instructions
 * and page tables into the monitor window (a fixed range of the reserved
 * area that stays shared), points the vCPU at them, and lets the guest's
 * own CPU zero every other page with `rep stosq`, a few GiB per pass.
 */
#ifndef CLOAK_X86_VCPU_WIPE_H
#define CLOAK_X86_VCPU_WIPE_H

#include <stdint.h>

#include "fail.h"
#include "kvm/vcpu.h"
#include "mem/guestmem.h"

/* Zeroes all guest memory outside the monitor window through the vCPU.
 * Returns the bytes zeroed, or -1 with the reason in *f. */
int64_t vcpu_wipe(struct vcpu *v, struct guestmem *gm, struct fail *f);

/* The plan, pure (unit-tested): pass i maps guest-physical [base, base +
 * VCPU_WIPE_PASS_BYTES) at virtual 0 and zeroes virtual [r1, r1+n1) and
 * [r2, r2+n2). Together the passes cover all of [0, mem) but the window. */
#define VCPU_WIPE_PASS_BYTES (4ull << 30)
#define VCPU_WIPE_PASSES_MAX 4
struct vcpu_wipe_pass {
	uint64_t base, r1, n1, r2, n2;
};
unsigned vcpu_wipe_plan(uint64_t mem, struct vcpu_wipe_pass out[VCPU_WIPE_PASSES_MAX]);
/* The page tables of a pass: seven pages for the window after its program
 * (PML4, PDPT, the program's PD, four data PDs). */
void vcpu_wipe_tables(uint64_t base, uint64_t tables[7][512]);

#endif

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
#include "kvm/vm.h"

/* Zeroes all guest memory outside the monitor window through the vCPU.
 * Returns the bytes zeroed, or -1 with the reason in *f. */
int64_t vcpu_wipe(struct vm *vm, struct fail *f);

#endif

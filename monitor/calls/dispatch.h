/* SPDX-License-Identifier: ISC */
/*
 * Hypercall dispatch. A call is a 32-bit `outl` of an argument block's
 * guest-physical address to port CLOAK_HC_PORT_BASE + nr. The dispatcher
 * copies the block in through the checked accesses, runs the handler on
 * the host copy, and copies it back; handlers never see guest memory
 * except through gm_* calls on guest addresses found in the block.
 *
 * The calls come from the one list in cloak/abi.h (CLOAK_HC_CALLS): it
 * declares each handler below, builds the dispatch table and checks every
 * argument block's size. A handler decodes its block, asks the module that
 * does the work (devices/, mem/, ...) and encodes the answer: it sets
 * `ret` and the OUT fields and returns 0 to resume the guest, or ends the
 * VM with vm_fail() for a violation that has no error code.
 */
#ifndef CLOAK_CALLS_DISPATCH_H
#define CLOAK_CALLS_DISPATCH_H

#include <stdint.h>

#include "kvm/vm.h"

/* int hc_NAME(struct vm *vm, struct cloak_hc_... *args); one per call. */
#define HC_DECLARE_(nr, NAME, name, type) int hc_##name(struct vm *vm, type *args);
CLOAK_HC_CALLS(HC_DECLARE_)
#undef HC_DECLARE_

/* Dispatches an `outl` of `value` to `port` with access `size` bytes.
 * Returns 0 to resume the guest, -1 if the VM has stopped. */
int hc_dispatch(struct vm *vm, uint16_t port, unsigned size, uint32_t value);

#endif

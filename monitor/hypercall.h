/*
 * Hypercall dispatch. A call is a 32-bit `outl` of an argument block's
 * guest-physical address to port CLOAK_HC_PORT_BASE + nr. The dispatcher
 * copies the block in through the checked-access module, runs the handler
 * on the host copy, and copies it back; handlers never see guest memory
 * except through gm_* calls on guest addresses found in the block.
 *
 * Adding a call: define its argument struct and number in
 * include/cloak/abi.h, write a handler with a `const struct hc_def`, and
 * list it in hc_table[] in hypercall.c.
 */
#ifndef CLOAK_HYPERCALL_H
#define CLOAK_HYPERCALL_H

#include <stddef.h>
#include <stdint.h>

#include "vm.h"

struct hc_def {
	unsigned nr;
	const char *name;
	size_t arg_size;
	/* Handles one call. `args` is the host copy of the argument block;
	 * the handler sets its `ret` (first int64_t) and OUT fields. Returns 0
	 * to resume the guest, or -1 after ending the VM (vm_fail or stopped). */
	int (*handle)(struct vm *vm, void *args);
};

/* Dispatches an `outl` of `value` to `port` with access `size` bytes.
 * Returns 0 to resume the guest, -1 if the VM has stopped. */
int hc_dispatch(struct vm *vm, uint16_t port, unsigned size, uint32_t value);

/* Looks up a call by number (NULL if not offered). */
const struct hc_def *hc_lookup(unsigned nr);

/* Handler definitions, one per module. */
extern const struct hc_def hc_nop_def, hc_console_def, hc_exit_def, hc_abort_def,
	hc_walltime_def, hc_poll_def, hc_random_def, hc_protect_def, hc_share_def,
	hc_unshare_def, hc_block_info_def, hc_block_io_def, hc_chan_open_def,
	hc_chan_io_def;

#endif

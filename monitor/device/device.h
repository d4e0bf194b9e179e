/* SPDX-License-Identifier: ISC */
/*
 * The device process (docs/design.md, "Two processes"): the part of the
 * monitor that faces the host. It answers the calls that reach a device or
 * the host's I/O (calls/calls.h lists them): the console, POLL, block
 * devices and channels; it reads block images and channel sockets and
 * nothing else of the host. Its state is this struct and nothing more: no
 * KVM descriptor, no vCPU, no descriptor of guest memory, only the
 * mapping of it that it inherited, of which it keeps the shared pages
 * (mem/device_view.h).
 *
 * With --no-device-isolation the same code runs inside the one monitor
 * process, over the runner's own guest memory.
 */
#ifndef CLOAK_DEVICE_DEVICE_H
#define CLOAK_DEVICE_DEVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "calls/calls.h"
#include "mem/guestmem.h"
#include "outcome.h"
#include "registry.h"

struct device {
	struct guestmem *gm;  /* the device process's view of guest memory */
	struct devices *dev;  /* block devices and channels; NULL: none */
	struct outcome out;
	struct call_counts counts;
	int dump_fd;          /* --dump-shared, or -1 */
	const char *dump_path;
};

/* One call the device process answers: an outl of `value` to `port`
 * (calls.h says which). 0 to resume the guest, -1 if the VM ended
 * (d->out says how). */
int device_call(struct device *d, uint16_t port, unsigned size, uint32_t value);
/* At the end: writes --dump-shared, prints the counts with --verbose (who:
 * whose they are; NULL: none, the guest never ran) and closes the devices (the path broker then removes listening sockets). */
void device_finish(struct device *d, const char *who);

/* The handlers: decode the block, ask the device, encode the answer. */
int dc_console(struct device *d, struct cloak_hc_console *a);
int dc_poll(struct device *d, struct cloak_hc_poll *a);
int dc_block_info(struct device *d, struct cloak_hc_block_info *a);
int dc_block_io(struct device *d, struct cloak_hc_block_io *a);
int dc_block_batch(struct device *d, struct cloak_hc_block_batch *a);
int dc_chan_open(struct device *d, struct cloak_hc_chan_open *a);
int dc_chan_io(struct device *d, struct cloak_hc_chan_io *a);
int dc_chan_xfer(struct device *d, struct cloak_hc_chan_xfer *a);

#endif

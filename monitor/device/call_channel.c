/* SPDX-License-Identifier: ISC */
/* CHAN_OPEN and CHAN_IO: decode, ask channel.h, encode. */
#include <string.h>

#include "device.h"
#include "test_hooks.h"
#include "waitset.h"

int dc_chan_open(struct device *d, struct cloak_hc_chan_open *a)
{
	a->name[CLOAK_NAME_MAX - 1] = '\0';
	a->handle = 0;
	unsigned h;
	struct channel *c = devices_chan_by_name(d->dev, a->name, &h);
	if (!c) {
		a->ret = -CLOAK_ENOENT;
		return 0;
	}
	a->handle = h;
	a->ret = channel_open(c, &d->dev->broker);
	return 0;
}

int dc_chan_io(struct device *d, struct cloak_hc_chan_io *a)
{
	struct channel *c = devices_chan(d->dev, a->handle);
	a->ret = c ? channel_io(c, d->gm, a->op, gpa(a->buf), a->len) : -CLOAK_ENOENT;
	return 0;
}

/* CHAN_XFER: the write, then the read, waiting for it as POLL would. A
 * wait that ends with nothing to read (its timeout, or a stop request the
 * run loop then acts on) is -CLOAK_EAGAIN: the guest's runtime keeps its
 * own deadline and asks again. */
int dc_chan_xfer(struct device *d, struct cloak_hc_chan_xfer *a)
{
	a->written = 0;
	if (test_hooks_no_xfer()) {
		a->ret = -CLOAK_ENOSYS;
		return 0;
	}
	struct channel *c = devices_chan(d->dev, a->handle);
	if (!c) {
		a->ret = -CLOAK_ENOENT;
		return 0;
	}
	if (a->in_len == 0) {
		a->ret = -CLOAK_EINVAL;
		return 0;
	}
	if (a->in_len > CLOAK_CHAN_IO_MAX || a->out_len > CLOAK_CHAN_IO_MAX) {
		a->ret = -CLOAK_E2BIG;
		return 0;
	}
	/* "in" before any byte moves: a bad one must not leave the reply sent
	 * and the call failed ("out" channel_io checks before it writes). */
	enum gm_status s = gm_check(d->gm, gpa(a->in), a->in_len);
	if (s != GM_OK) {
		a->ret = gm_status_abi(s);
		return 0;
	}
	if (a->out_len) {
		int64_t n = channel_io(c, d->gm, CLOAK_CHAN_WRITE, gpa(a->out), a->out_len);
		if (n < 0) {
			a->ret = n;
			return 0;
		}
		a->written = (uint64_t)n;
		if (a->written < a->out_len) {
			a->ret = -CLOAK_EAGAIN;
			return 0;
		}
	}
	uint64_t bit = CLOAK_CHAN_POLL_BIT(a->handle), ready = 0;
	a->ret = channel_io(c, d->gm, CLOAK_CHAN_READ, gpa(a->in), a->in_len);
	if (a->ret != -CLOAK_EAGAIN || !a->timeout_ns)
		return 0;
	test_hooks_before_poll();
	int64_t w = waitset_wait(d->dev, a->timeout_ns, bit, &ready);
	if (w < 0)
		a->ret = w;
	else if (ready & bit)
		a->ret = channel_io(c, d->gm, CLOAK_CHAN_READ, gpa(a->in), a->in_len);
	return 0;
}

/* SPDX-License-Identifier: ISC */
/* CHAN_OPEN and CHAN_IO: decode, ask channel.h, encode. */
#include <string.h>

#include "device.h"

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

/* SPDX-License-Identifier: ISC */
/* CHAN_OPEN and CHAN_IO: decode, ask devices/channel, encode. */
#include <string.h>

#include "devices/registry.h"
#include "dispatch.h"

int hc_chan_open(struct vm *vm, struct cloak_hc_chan_open *a)
{
	a->name[CLOAK_NAME_MAX - 1] = '\0';
	a->handle = 0;
	unsigned h;
	struct channel *c = devices_chan_by_name(vm->dev, a->name, &h);
	if (!c) {
		a->ret = -CLOAK_ENOENT;
		return 0;
	}
	a->handle = h;
	a->ret = channel_open(c, &vm->dev->broker);
	return 0;
}

int hc_chan_io(struct vm *vm, struct cloak_hc_chan_io *a)
{
	struct channel *c = devices_chan(vm->dev, a->handle);
	a->ret = c ? channel_io(c, vm->gm, a->op, gpa(a->buf), a->len) : -CLOAK_ENOENT;
	return 0;
}

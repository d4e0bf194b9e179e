/* SPDX-License-Identifier: ISC */
/* The device process's calls: decoded once (calls/calls.h), answered by
 * their handler, encoded back; see device.h. */

#include "device.h"
#include "dump_shared.h"

int device_call(struct device *d, uint16_t port, unsigned size, uint32_t value)
{
	unsigned nr = 0;
	if (call_side(port, size, &nr) != CALL_DEVICE)
		return outcome_fail(&d->out, CLOAK_EXIT_INTERNAL,
				    "device process: port 0x%x is not one of its calls", port);
	struct call c;
	if (call_decode(d->gm, &d->out, &d->counts, nr, value, &c))
		return -1;
	int r;
	switch (nr) {
#define DEVICE_CASE_(NAME, name)                                        \
	case CLOAK_HC_##NAME:                                           \
		r = dc_##name(d, (void *)c.args);                       \
		break;
		CLOAK_DEVICE_CALLS(DEVICE_CASE_)
#undef DEVICE_CASE_
	default:
		r = -1;
	}
	if (r != 0 || d->out.stopped)
		return -1;
	call_encode(d->gm, &d->out, &d->counts, &c);
	return 0;
}

void device_finish(struct device *d, const char *who)
{
	if (who)
		call_counts_print(&d->out, who, &d->counts, d->gm ? gm_refused(d->gm) : 0);
	if (d->dump_fd >= 0) {
		uint64_t pages = dump_shared_write(d->dump_fd, d->dump_path, d->gm);
		outcome_verbose(&d->out, "dumped %llu shared pages to %s",
				(unsigned long long)pages, d->dump_path);
		d->dump_fd = -1;
	}
	devices_finish(d->dev);
	d->dev = NULL;
}

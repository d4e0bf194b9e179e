/* SPDX-License-Identifier: ISC */
/* POLL: the guest sleeps in the monitor instead of spinning (waitset.h). */
#include "device.h"
#include "test_hooks.h"
#include "waitset.h"

int dc_poll(struct device *d, struct cloak_hc_poll *a)
{
	test_hooks_before_poll();
	a->ret = waitset_wait(d->dev, a->timeout_ns, a->wait_set, &a->ready_set);
	return 0;
}

/* SPDX-License-Identifier: ISC */
/* POLL: the guest sleeps in the monitor instead of spinning (devices/waitset). */
#include "devices/waitset.h"
#include "dispatch.h"
#include "test_hooks.h"

int hc_poll(struct vm *vm, struct cloak_hc_poll *a)
{
	test_hooks_before_poll();
	a->ret = waitset_wait(vm->dev, a->timeout_ns, a->wait_set, &a->ready_set);
	return 0;
}

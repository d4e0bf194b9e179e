/* POLL: the guest sleeps here instead of spinning. Without devices it is a
 * plain sleep; with devices (devices.h) it waits on their epoll set. Both
 * are interrupted by the watchdog and by termination signals. */
#include <errno.h>
#include <time.h>

#include "devices.h"
#include "hypercall.h"

static int hc_poll(struct vm *vm, void *args)
{
	struct cloak_hc_poll *a = args;
	a->ready_set = 0;
	if (vm->dev) {
		a->ret = devices_poll(vm, a->timeout_ns, a->wait_set, &a->ready_set);
		return 0;
	}
	if (a->wait_set) {
		a->ret = -CLOAK_ENOENT; /* no device can become ready */
		return 0;
	}
	struct timespec ts = { .tv_sec = (time_t)(a->timeout_ns / 1000000000ull),
			       .tv_nsec = (long)(a->timeout_ns % 1000000000ull) };
	/* EINTR means a watchdog or signal fired: the run loop notices. */
	nanosleep(&ts, NULL);
	a->ret = 0;
	return 0;
}
const struct hc_def hc_poll_def = { CLOAK_HC_POLL, "poll", sizeof(struct cloak_hc_poll), hc_poll };

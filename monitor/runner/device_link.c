/* SPDX-License-Identifier: ISC */
/* The runner's half of the split monitor; see device_link.h. */
#include "device_link.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process/signals.h"
#include "runner.h"

/* The runner waits for a reply in slices this long, to notice a device
 * process that died (nothing else wakes it then). */
#define LINK_SLICE_NS 50000000l

int link_signal(const struct device_link *l, int sig)
{
	/* Through the pidfd: the runner's sandbox allows no kill(), so it
	 * can signal no process but this one. Without a pidfd (valgrind
	 * knows no pidfd_open; it runs without the sandbox) kill() does. */
	if (l->pidfd < 0)
		return kill(l->pid, sig);
	return (int)syscall(SYS_pidfd_send_signal, l->pidfd, sig, NULL, 0);
}

static int device_failed(struct runner *r, const char *why)
{
	link_signal(r->link, SIGKILL);
	return outcome_fail(&r->out, CLOAK_EXIT_DEVICE, "device process %s: guest stopped", why);
}

static bool stop_requested(void)
{
	return signals_watchdog_fired() || signals_stop_signal() != 0;
}

/* One request and its reply. 0: resume; -1: the VM ended. */
static int exchange(struct runner *r, uint32_t op, uint16_t port, unsigned size, uint32_t value)
{
	struct device_link *l = r->link;
	/* Nothing may have been answered since the last reply. */
	if (handoff_unsolicited(&l->h))
		return device_failed(r, "replied to a request never made");
	l->pending.op = op;
	l->pending.port = port;
	l->pending.size = size;
	l->pending.value = value;
	bool check = l->check_maps;
	handoff_send(&l->h, &l->pending);
	l->pending.nchanges = 0;
	l->check_maps = false;
	const struct timespec slice = { 0, LINK_SLICE_NS };
	while (!handoff_await(&l->h, &slice)) {
		if (stop_requested()) {
			/* The call may sleep (POLL): cut it; the run loop ends
			 * the VM with the stop request's status. */
			link_signal(l, SIGTERM);
			return 0;
		}
		if (waitpid(l->pid, NULL, WNOHANG) == l->pid) {
			l->pid = -1;
			return outcome_fail(&r->out, CLOAK_EXIT_DEVICE,
					    "device process died: guest stopped");
		}
	}
	struct handoff_reply rep;
	const char *why;
	if (handoff_take_reply(&l->h, &rep, &why))
		return device_failed(r, why);
	if (rep.verdict == HANDOFF_END) {
		if (rep.signal)
			return outcome_fail(&r->out, CLOAK_EXIT_INTERRUPTED,
					    "interrupted by signal %d (%s), guest stopped",
					    rep.signal, strsignal(rep.signal));
		return outcome_end(&r->out, rep.status); /* the device process said why */
	}
	char reason[200];
	if (check && gm_protected(r->gm) &&
	    device_maps_check(l->maps_fd, r->gm, &l->guest, reason, sizeof reason))
		return device_failed(r, reason);
	return 0;
}

int link_call(struct runner *r, uint16_t port, unsigned size, uint32_t value)
{
	return exchange(r, HANDOFF_CALL, port, size, value);
}

int link_change(struct runner *r, uint32_t kind, uint64_t gpa, uint64_t npages, bool now)
{
	struct device_link *l = r->link;
	if (l->pending.nchanges == HANDOFF_CHANGES_MAX && exchange(r, HANDOFF_SYNC, 0, 0, 0))
		return -1;
	l->pending.change[l->pending.nchanges++] =
		(struct handoff_change){ .kind = kind, .gpa = gpa, .npages = npages };
	if (kind != HANDOFF_SHARE)
		l->check_maps = true;
	return now ? exchange(r, HANDOFF_SYNC, 0, 0, 0) : 0;
}

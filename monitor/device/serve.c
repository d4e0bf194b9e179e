/* SPDX-License-Identifier: ISC */
/* The device process; see serve.h. */
#include "serve.h"

#include <errno.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "console.h"
#include "mem/device_view.h"
#include "process/fd_pass.h"
#include "process/sandbox.h"
#include "process/signals.h"
#include "test_hooks.h"
#include "waitset.h"

static void enter(struct device *d, pid_t runner, int maps_sock, bool no_sandbox)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid() != runner)
		_exit(CLOAK_EXIT_DEVICE);
	/* Opened first, while this is still the monitor's own code; the
	 * runner cannot open it (neither process is dumpable). */
	if (fd_pass_own_maps(maps_sock) != 0)
		_exit(CLOAK_EXIT_DEVICE); /* the runner reports it */
	prctl(PR_SET_NAME, "cloak-devices", 0, 0, 0);
	gm_device_adopt(d->gm);
	/* Nothing to wipe here: the runner wipes, and a fault here must not
	 * zero the guest's memory under it. */
	signals_set_fault_wipe(NULL, NULL);
	console_init();
	test_hooks_device_enter(false);
	if (!no_sandbox && sandbox_enter_devices()) {
		fprintf(stderr, "cloak: device process: cannot enter its seccomp sandbox: %s\n",
			strerror(errno));
		_exit(CLOAK_EXIT_DEVICE);
	}
	test_hooks_device_enter(true);
	test_hooks_phase("device process entered");
}

static _Noreturn void finish(struct device *d)
{
	device_finish(d, "device process");
	fflush(NULL);
	_exit(0);
}

/* The runner's decoded changes, in order; 0, or -1 if this view refused
 * one the runner accepted (the views differ: the VM ends). */
static int apply(struct device *d, const struct handoff_request *rq)
{
	for (uint32_t i = 0; i < rq->nchanges; i++) {
		const struct handoff_change *c = &rq->change[i];
		enum gm_status s = GM_OK;
		switch (c->kind) {
		case HANDOFF_PROTECT: gm_device_protect(d->gm); break;
		case HANDOFF_SHARE: s = gm_device_share(d->gm, gpa(c->gpa), c->npages); break;
		case HANDOFF_UNSHARE: s = gm_device_unshare(d->gm, gpa(c->gpa), c->npages); break;
		default: s = GM_EINVAL;
		}
		if (s != GM_OK)
			return outcome_fail(&d->out, CLOAK_EXIT_INTERNAL,
					    "device process: its view of guest memory refused a "
					    "change the runner made (kind %u at 0x%llx)", c->kind,
					    (unsigned long long)c->gpa);
	}
	return 0;
}

/* The readiness page (handoff/handoff.h): what a zero-timeout POLL would
 * answer now, for the runner to answer it without a hand-off. */
static uint64_t publish_readiness(struct device *d, struct handoff *h)
{
	uint64_t known, ready;
	waitset_readiness(d->dev, &known, &ready);
	atomic_store_explicit(&h->page->known, known, memory_order_relaxed);
	atomic_store_explicit(&h->page->ready, ready, memory_order_release);
	return ready;
}

bool device_next_request(struct device *d, struct handoff *h, struct handoff_request *out)
{
	struct handoff_page *p = h->page;
	uint32_t seq = atomic_load_explicit(&p->req_seq, memory_order_acquire);
	if (seq == h->seq) {
		if (!handoff_spin(h, &p->req_seq, seq)) {
			uint64_t ready = publish_readiness(d, h);
			atomic_store(&p->req_sleeping, 1);
			if (atomic_load(&p->req_seq) == seq)
				waitset_idle(d->dev, h->wake_fd, ready);
			atomic_store(&p->req_sleeping, 0);
		}
		seq = atomic_load_explicit(&p->req_seq, memory_order_acquire);
		if (seq == h->seq)
			return false;
	}
	memcpy(out, &p->req, offsetof(struct handoff_request, change));
	if (out->nchanges > HANDOFF_CHANGES_MAX)
		out->nchanges = HANDOFF_CHANGES_MAX;
	memcpy(out->change, p->req.change, out->nchanges * sizeof out->change[0]);
	h->seq = seq;
	return true;
}

/* Publishes the reply to the request last taken. */
static void reply(struct device *d, struct handoff *h, uint64_t token, int sig)
{
	struct handoff_reply r = {
		.verdict = d->out.stopped ? HANDOFF_END : HANDOFF_RESUME,
		.status = d->out.status,
		.signal = d->out.stopped && d->out.status == CLOAK_EXIT_INTERRUPTED ? sig : 0,
		.token = token,
	};
	uint32_t seq = h->seq;
	uint32_t extra = test_hooks_device_reply(&seq, &r.verdict, &r.status);
	publish_readiness(d, h);
	h->page->rep = r;
	/* seq is the request's own, but where a test hook changed it */
	handoff_publish(&h->page->rep_seq, &h->page->rep_sleeping, seq);
	if (extra) { /* a test hook's reply to a request not made yet; then
		      * this process answers nothing more */
		atomic_store_explicit(&h->page->rep_seq, extra, memory_order_release);
		handoff_futex(&h->page->rep_seq, FUTEX_WAKE, 1, NULL);
		for (;;)
			pause();
	}
}

_Noreturn void device_serve(struct device *d, struct handoff *h, pid_t runner, int maps_sock,
			    bool no_sandbox)
{
	enter(d, runner, maps_sock, no_sandbox);
	struct handoff_request rq;
	for (;;) {
		/* A stop request that lands while this process waits for the
		 * runner is answered at the next request: the runner is the
		 * one to end the VM. */
		if (!device_next_request(d, h, &rq))
			continue;
		/* The changes first, FINISH's too: --dump-shared must see every
		 * page shared. */
		int applied = apply(d, &rq);
		if (rq.op == HANDOFF_FINISH)
			finish(d);
		if (applied == 0 && rq.op == HANDOFF_CALL &&
		    device_call(d, (uint16_t)rq.port, rq.size, rq.value) != 0 && !d->out.stopped)
			outcome_fail(&d->out, CLOAK_EXIT_INTERNAL, "call on port 0x%x failed",
				     rq.port);
		/* A stop request sent to this process alone (or cutting its
		 * POLL) ends the VM as one sent to the runner would; the runner
		 * says so. */
		int sig = signals_stop_signal();
		if (sig)
			outcome_end(&d->out, CLOAK_EXIT_INTERRUPTED);
		reply(d, h, rq.token, sig);
		if (d->out.stopped)
			finish(d);
	}
}

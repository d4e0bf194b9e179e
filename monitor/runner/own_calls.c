/* SPDX-License-Identifier: ISC */
/*
 * The calls the vCPU runner answers itself (calls/calls.h says which and
 * docs/threat-model.md why each is safe here; run.c hands them here): none
 * reads host input, so none needs the device process. The guest's memory calls are decoded here
 * and only here: the runner owns guest memory, so it applies each change to
 * its own bookkeeping (mem/guestmem.h), answers the guest, and tells the
 * device process what changed (device_link.h).
 *
 * PROTECT turns checked access on for good; SHARE and UNSHARE move pages
 * between private (the default once protected) and shared. The monitor
 * window can never be unshared (-CLOAK_EPERM for any range that touches
 * it): the monitor needs it to wipe memory it gave up (x86/vcpu_wipe.h);
 * docs/abi.md, "Pages that can never be unshared".
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "device_link.h"
#include "diagnose.h"
#include "runner.h"
#include "text.h"
#include "x86/x86.h"

int rc_nop(struct runner *r, struct cloak_hc_nop *a)
{
	a->ret = 0;
	return 0;
}

int rc_exit(struct runner *r, struct cloak_hc_exit *a)
{
	if (a->status < 0 || a->status > CLOAK_EXIT_STATUS_MAX)
		return outcome_fail(&r->out, CLOAK_EXIT_VIOLATION,
				    "guest exited with status %lld, outside 0-%d (statuses above "
				    "are the monitor's own)", (long long)a->status,
				    CLOAK_EXIT_STATUS_MAX);
	outcome_verbose(&r->out, "guest exited with status %lld", (long long)a->status);
	return outcome_end(&r->out, (int)a->status);
}

int rc_abort(struct runner *r, struct cloak_hc_abort *a)
{
	if (a->vector < X86_VEC_COUNT) {
		char why[300];
		run_exception_diagnosis(a, why, sizeof why);
		return outcome_fail(&r->out, CLOAK_EXIT_ABORT, "%s", why);
	}
	char msg[CLOAK_ABORT_MSG_MAX + 1] = "";
	uint64_t len = a->msg_len > CLOAK_ABORT_MSG_MAX ? CLOAK_ABORT_MSG_MAX : a->msg_len;
	if (a->msg && len) {
		if (gm_copy_from(r->gm, msg, gpa(a->msg), len) == GM_OK) {
			msg[len] = 0;
			msg[strcspn(msg, "\n")] = 0; /* one line */
			text_for_log_line(msg, strlen(msg));
		} else {
			snprintf(msg, sizeof msg, "(message at 0x%llx unreadable)",
				 (unsigned long long)a->msg);
		}
	}
	return outcome_fail(&r->out, CLOAK_EXIT_ABORT, "guest aborted: %s",
			    msg[0] ? msg : "(no message)");
}

int rc_walltime(struct runner *r, struct cloak_hc_walltime *a)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	a->epoch_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	a->ret = 0;
	return 0;
}

int rc_random(struct runner *r, struct cloak_hc_random *a)
{
	unsigned char buf[CLOAK_RANDOM_MAX];
	if (a->len > CLOAK_RANDOM_MAX) {
		a->ret = -CLOAK_E2BIG;
		return 0;
	}
	enum gm_status s = gm_check(r->gm, gpa(a->buf), a->len);
	if (s != GM_OK) {
		a->ret = gm_status_abi(s);
		return 0;
	}
	if (a->len && getrandom(buf, a->len, 0) != (ssize_t)a->len) {
		a->ret = -CLOAK_EIO;
		return 0;
	}
	gm_copy_to(r->gm, gpa(a->buf), buf, a->len);
	explicit_bzero(buf, sizeof buf);
	a->ret = (int64_t)a->len;
	return 0;
}

int rc_protect(struct runner *r, struct cloak_hc_protect *a)
{
	if (!gm_protected(r->gm)) {
		/* The argument block itself is private from now on unless the
		 * guest shared it first; the reply is then dropped, so the
		 * runtime shares its call area before enabling protection. */
		gm_protect(r->gm);
		outcome_verbose(&r->out, "guest enabled memory protection (%llu pages shared)",
				(unsigned long long)gm_shared_pages(r->gm));
		/* The device process unmaps every private page before the
		 * guest runs again. */
		if (r->link && link_change(r, HANDOFF_PROTECT, 0, 0, true))
			return -1;
	}
	a->flags = gm_host_protections(r->gm);
	a->ret = 0;
	return 0;
}

int rc_share(struct runner *r, struct cloak_hc_share *a)
{
	enum gm_status s = gm_share(r->gm, gpa(a->gpa), a->npages);
	a->ret = gm_status_abi(s);
	/* The device process needs the page before it next answers a call:
	 * the change goes with the next request. */
	if (s == GM_OK && r->link)
		return link_change(r, HANDOFF_SHARE, a->gpa, a->npages, false);
	return 0;
}

int rc_unshare(struct runner *r, struct cloak_hc_share *a)
{
	enum gm_status s = gm_unshare(r->gm, gpa(a->gpa), a->npages);
	a->ret = gm_status_abi(s);
	/* Once protected, the device process unmaps the pages before the
	 * guest runs again (the guest may put secrets there next); before,
	 * it maps everything anyway and the change can wait. */
	if (s == GM_OK && r->link)
		return link_change(r, HANDOFF_UNSHARE, a->gpa, a->npages, gm_protected(r->gm));
	return 0;
}

bool rc_poll_now(struct runner *r, uint32_t value)
{
	struct call c;
	if (call_decode(r->gm, &r->out, NULL, CLOAK_HC_POLL, value, &c))
		return true; /* the VM ended */
	struct cloak_hc_poll *a = (struct cloak_hc_poll *)c.args;
	if (a->timeout_ns != 0)
		return false;
	/* What the device process answers for the same POLL (device/
	 * waitset.c): a device that does not exist or is not open is
	 * ENOENT; otherwise the ready ones of those asked for. */
	const struct handoff_page *p = r->link->h.page;
	uint64_t known = atomic_load_explicit(&p->known, memory_order_relaxed);
	uint64_t ready = atomic_load_explicit(&p->ready, memory_order_acquire);
	a->ready_set = a->wait_set & ~known ? 0 : ready & a->wait_set;
	a->ret = a->wait_set & ~known ? -CLOAK_ENOENT : 0;
	r->counts.calls[CLOAK_HC_POLL]++;
	call_encode(r->gm, &r->out, &r->counts, &c);
	return true;
}

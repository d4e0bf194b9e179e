/* SPDX-License-Identifier: ISC */
/*
 * The calls the vCPU runner answers itself (calls/calls.h says which and
 * docs/threat-model.md why each is safe here): none reads host input, so
 * none needs the device process. The guest's memory calls are decoded here
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
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "device/device.h"
#include "device_link.h"
#include "runner.h"
#include "text.h"
#include "x86/x86.h"

int runner_call(struct runner *r, uint16_t port, unsigned size, uint32_t value)
{
	unsigned nr = 0;
	switch (call_side(port, size, &nr)) {
	case CALL_NONE:
		return call_refuse(&r->out, port, size);
	case CALL_UNKNOWN:
		return call_unknown(r->gm, &r->out, &r->counts, nr, value);
	case CALL_DEVICE:
		if (r->link)
			return link_call(r, port, size, value);
		if (device_call(r->local, port, size, value) == 0)
			return 0;
		return outcome_end(&r->out, r->local->out.status);
	case CALL_RUNNER:
		break;
	}
	struct call c;
	if (call_decode(r->gm, &r->out, &r->counts, nr, value, &c))
		return -1;
	int ret;
	switch (nr) {
#define RUNNER_CASE_(NAME, name)                                        \
	case CLOAK_HC_##NAME:                                           \
		ret = rc_##name(r, (void *)c.args);                     \
		break;
		CLOAK_RUNNER_CALLS(RUNNER_CASE_)
#undef RUNNER_CASE_
	default:
		ret = -1;
	}
	if (ret != 0 || r->out.stopped)
		return -1;
	call_encode(r->gm, &r->out, &r->counts, &c);
	return 0;
}

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

static const char *const vector_names[X86_VEC_COUNT] = {
	[X86_VEC_DE] = "#DE divide error", [X86_VEC_DB] = "#DB debug", [X86_VEC_NMI] = "NMI",
	[X86_VEC_BP] = "#BP breakpoint", [X86_VEC_OF] = "#OF overflow",
	[X86_VEC_BR] = "#BR bound range", [X86_VEC_UD] = "#UD invalid opcode",
	[X86_VEC_NM] = "#NM device not available", [X86_VEC_DF] = "#DF double fault",
	[X86_VEC_TS] = "#TS invalid TSS", [X86_VEC_NP] = "#NP segment not present",
	[X86_VEC_SS] = "#SS stack fault", [X86_VEC_GP] = "#GP general protection",
	[X86_VEC_PF] = "#PF page fault", [X86_VEC_MF] = "#MF x87 error",
	[X86_VEC_AC] = "#AC alignment check", [X86_VEC_MC] = "#MC machine check",
	[X86_VEC_XM] = "#XM SIMD error", [X86_VEC_VE] = "#VE virtualization",
	[X86_VEC_CP] = "#CP control protection",
};

static int page_fault(struct runner *r, const struct cloak_hc_abort *a, const char *name)
{
	/* A fault within a page of the stack pointer is the stack running
	 * into the guard page under it. A write fault at the instruction's
	 * own address is KVM patching vmcall/vmmcall in place, which
	 * read-only code refuses. */
	uint64_t d = a->cr2 > a->rsp ? a->cr2 - a->rsp : a->rsp - a->cr2;
	bool overflow = d <= CLOAK_PAGE_SIZE;
	bool patch = a->cr2 == a->rip && (a->error_code & X86_PF_WRITE);
	return outcome_fail(&r->out, CLOAK_EXIT_ABORT,
		       "guest exception: vector %u (%s) error 0x%llx at rip 0x%llx, address "
		       "0x%llx%s", a->vector, name, (unsigned long long)a->error_code,
		       (unsigned long long)a->rip, (unsigned long long)a->cr2,
		       overflow ? " (stack overflow: the fault is next to the stack pointer)"
		       : patch ? " (KVM tried to rewrite a vmcall/vmmcall in read-only code: "
				 "guests call the monitor with port I/O)" : "");
}

int rc_abort(struct runner *r, struct cloak_hc_abort *a)
{
	if (a->vector < X86_VEC_COUNT) {
		const char *name = vector_names[a->vector] ? vector_names[a->vector] : "reserved";
		if (a->vector == X86_VEC_PF)
			return page_fault(r, a, name);
		return outcome_fail(&r->out, CLOAK_EXIT_ABORT,
			       "guest exception: vector %u (%s) error 0x%llx at rip 0x%llx",
			       a->vector, name, (unsigned long long)a->error_code,
			       (unsigned long long)a->rip);
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
	return outcome_fail(&r->out, CLOAK_EXIT_ABORT, "guest aborted: %s", msg[0] ? msg : "(no message)");
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

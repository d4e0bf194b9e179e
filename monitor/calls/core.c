/* SPDX-License-Identifier: ISC */
/* The core calls: nop, console, exit, abort, wall-clock time, random.
 * Each decodes its block, asks the host and encodes the answer. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "devices/console.h"
#include "dispatch.h"
#include "text.h"
#include "x86/x86.h"

int hc_nop(struct vm *vm, struct cloak_hc_nop *a)
{
	a->ret = 0;
	return 0;
}

int hc_console(struct vm *vm, struct cloak_hc_console *a)
{
	char buf[CLOAK_CONSOLE_MAX];
	if (a->len > CLOAK_CONSOLE_MAX) {
		a->ret = -CLOAK_E2BIG;
		return 0;
	}
	enum gm_status s = gm_copy_from(vm->gm, buf, gpa(a->buf), a->len);
	if (s != GM_OK) {
		a->ret = gm_status_abi(s);
		return 0;
	}
	a->ret = (int64_t)console_write(buf, a->len);
	return 0;
}

int hc_exit(struct vm *vm, struct cloak_hc_exit *a)
{
	if (a->status < 0 || a->status > CLOAK_EXIT_STATUS_MAX)
		return vm_fail(vm, CLOAK_EXIT_VIOLATION,
			       "guest exited with status %lld, outside 0-%d (statuses above "
			       "are the monitor's own)", (long long)a->status,
			       CLOAK_EXIT_STATUS_MAX);
	vm->stopped = true;
	vm->exit_status = (int)a->status;
	vm_verbose(vm, "guest exited with status %d", vm->exit_status);
	return -1;
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

static int page_fault(struct vm *vm, const struct cloak_hc_abort *a, const char *name)
{
	/* A fault within a page of the stack pointer is the stack running
	 * into the guard page under it. A write fault at the instruction's
	 * own address is KVM patching vmcall/vmmcall in place, which
	 * read-only code refuses. */
	uint64_t d = a->cr2 > a->rsp ? a->cr2 - a->rsp : a->rsp - a->cr2;
	bool overflow = d <= CLOAK_PAGE_SIZE;
	bool patch = a->cr2 == a->rip && (a->error_code & X86_PF_WRITE);
	return vm_fail(vm, CLOAK_EXIT_ABORT,
		       "guest exception: vector %u (%s) error 0x%llx at rip 0x%llx, address "
		       "0x%llx%s", a->vector, name, (unsigned long long)a->error_code,
		       (unsigned long long)a->rip, (unsigned long long)a->cr2,
		       overflow ? " (stack overflow: the fault is next to the stack pointer)"
		       : patch ? " (KVM tried to rewrite a vmcall/vmmcall in read-only code: "
				 "guests call the monitor with port I/O)" : "");
}

int hc_abort(struct vm *vm, struct cloak_hc_abort *a)
{
	if (a->vector < X86_VEC_COUNT) {
		const char *name = vector_names[a->vector] ? vector_names[a->vector] : "reserved";
		if (a->vector == X86_VEC_PF)
			return page_fault(vm, a, name);
		return vm_fail(vm, CLOAK_EXIT_ABORT,
			       "guest exception: vector %u (%s) error 0x%llx at rip 0x%llx",
			       a->vector, name, (unsigned long long)a->error_code,
			       (unsigned long long)a->rip);
	}
	char msg[CLOAK_ABORT_MSG_MAX + 1] = "";
	uint64_t len = a->msg_len > CLOAK_ABORT_MSG_MAX ? CLOAK_ABORT_MSG_MAX : a->msg_len;
	if (a->msg && len) {
		if (gm_copy_from(vm->gm, msg, gpa(a->msg), len) == GM_OK) {
			msg[len] = 0;
			msg[strcspn(msg, "\n")] = 0; /* one line */
			text_for_log_line(msg, strlen(msg));
		} else {
			snprintf(msg, sizeof msg, "(message at 0x%llx unreadable)",
				 (unsigned long long)a->msg);
		}
	}
	return vm_fail(vm, CLOAK_EXIT_ABORT, "guest aborted: %s", msg[0] ? msg : "(no message)");
}

int hc_walltime(struct vm *vm, struct cloak_hc_walltime *a)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	a->epoch_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	a->ret = 0;
	return 0;
}

int hc_random(struct vm *vm, struct cloak_hc_random *a)
{
	unsigned char buf[CLOAK_RANDOM_MAX];
	if (a->len > CLOAK_RANDOM_MAX) {
		a->ret = -CLOAK_E2BIG;
		return 0;
	}
	enum gm_status s = gm_check(vm->gm, gpa(a->buf), a->len);
	if (s != GM_OK) {
		a->ret = gm_status_abi(s);
		return 0;
	}
	if (a->len && getrandom(buf, a->len, 0) != (ssize_t)a->len) {
		a->ret = -CLOAK_EIO;
		return 0;
	}
	gm_copy_to(vm->gm, gpa(a->buf), buf, a->len);
	explicit_bzero(buf, sizeof buf);
	a->ret = (int64_t)a->len;
	return 0;
}

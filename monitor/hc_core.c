/* The core calls: nop, console, exit, abort, wall-clock time, random. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "hypercall.h"

static int hc_nop(struct vm *vm, void *args)
{
	((struct cloak_hc_nop *)args)->ret = 0;
	return 0;
}
const struct hc_def hc_nop_def = { CLOAK_HC_NOP, "nop", sizeof(struct cloak_hc_nop), hc_nop };

/* Guest bytes are hostile: on a terminal, control characters other than
 * newline, tab and carriage return are shown as '?', so a guest cannot
 * drive the user's terminal with escape sequences. */
static void sanitize(char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if ((c < 0x20 && c != '\n' && c != '\t' && c != '\r') || c == 0x7f)
			s[i] = '?';
	}
}

static int hc_console(struct vm *vm, void *args)
{
	struct cloak_hc_console *a = args;
	char buf[CLOAK_CONSOLE_MAX];
	if (a->len > CLOAK_CONSOLE_MAX) {
		a->ret = -CLOAK_E2BIG;
		return 0;
	}
	enum gm_status s = gm_copy_from(vm->gm, buf, gpa(a->buf), a->len);
	if (s != GM_OK) {
		a->ret = s == GM_EACCES ? -CLOAK_EACCES : -CLOAK_EFAULT;
		return 0;
	}
	static int tty = -1;
	if (tty < 0)
		tty = isatty(STDOUT_FILENO);
	if (tty)
		sanitize(buf, a->len);
	size_t done = 0;
	while (done < a->len) {
		ssize_t w = write(STDOUT_FILENO, buf + done, a->len - done);
		if (w <= 0)
			break;
		done += (size_t)w;
	}
	a->ret = (int64_t)done;
	return 0;
}
const struct hc_def hc_console_def = { CLOAK_HC_CONSOLE, "console",
				       sizeof(struct cloak_hc_console), hc_console };

static int hc_exit(struct vm *vm, void *args)
{
	struct cloak_hc_exit *a = args;
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
const struct hc_def hc_exit_def = { CLOAK_HC_EXIT, "exit", sizeof(struct cloak_hc_exit), hc_exit };

static const char *const vector_names[32] = {
	[0] = "#DE divide error", [1] = "#DB debug", [2] = "NMI", [3] = "#BP breakpoint",
	[4] = "#OF overflow", [5] = "#BR bound range", [6] = "#UD invalid opcode",
	[7] = "#NM device not available", [8] = "#DF double fault",
	[10] = "#TS invalid TSS", [11] = "#NP segment not present",
	[12] = "#SS stack fault", [13] = "#GP general protection",
	[14] = "#PF page fault", [16] = "#MF x87 error", [17] = "#AC alignment check",
	[18] = "#MC machine check", [19] = "#XM SIMD error", [20] = "#VE virtualization",
	[21] = "#CP control protection",
};

static int hc_abort(struct vm *vm, void *args)
{
	struct cloak_hc_abort *a = args;
	char msg[CLOAK_ABORT_MSG_MAX + 1] = "";
	uint64_t len = a->msg_len > CLOAK_ABORT_MSG_MAX ? CLOAK_ABORT_MSG_MAX : a->msg_len;
	if (a->msg && len) {
		if (gm_copy_from(vm->gm, msg, gpa(a->msg), len) == GM_OK) {
			msg[len] = 0;
			msg[strcspn(msg, "\n")] = 0; /* one line */
			sanitize(msg, strlen(msg));
		} else {
			snprintf(msg, sizeof msg, "(message at 0x%llx unreadable)",
				 (unsigned long long)a->msg);
		}
	}
	if (a->vector < 32) {
		const char *name = vector_names[a->vector] ? vector_names[a->vector] : "reserved";
		if (a->vector == 14) {
			/* A fault within a page of the stack pointer is the stack
			 * running into the guard page under it. A write fault at the
			 * instruction's own address is KVM patching vmcall/vmmcall in
			 * place, which read-only code refuses. */
			uint64_t d = a->cr2 > a->rsp ? a->cr2 - a->rsp : a->rsp - a->cr2;
			bool overflow = d <= CLOAK_PAGE_SIZE;
			bool patch = a->cr2 == a->rip && (a->error_code & 2);
			return vm_fail(vm, CLOAK_EXIT_ABORT,
				       "guest exception: vector %u (%s) error 0x%llx at rip "
				       "0x%llx, address 0x%llx%s", a->vector, name,
				       (unsigned long long)a->error_code,
				       (unsigned long long)a->rip, (unsigned long long)a->cr2,
				       overflow ? " (stack overflow: the fault is next to the "
						  "stack pointer)"
				       : patch ? " (KVM tried to rewrite a vmcall/vmmcall in "
						 "read-only code: guests call the monitor with port "
						 "I/O)" : "");
		}
		return vm_fail(vm, CLOAK_EXIT_ABORT,
			       "guest exception: vector %u (%s) error 0x%llx at rip 0x%llx",
			       a->vector, name, (unsigned long long)a->error_code,
			       (unsigned long long)a->rip);
	}
	return vm_fail(vm, CLOAK_EXIT_ABORT, "guest aborted: %s", msg[0] ? msg : "(no message)");
}
const struct hc_def hc_abort_def = { CLOAK_HC_ABORT, "abort", sizeof(struct cloak_hc_abort),
				     hc_abort };

static int hc_walltime(struct vm *vm, void *args)
{
	struct cloak_hc_walltime *a = args;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	a->epoch_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	a->ret = 0;
	return 0;
}
const struct hc_def hc_walltime_def = { CLOAK_HC_WALLTIME, "walltime",
					sizeof(struct cloak_hc_walltime), hc_walltime };

static int hc_random(struct vm *vm, void *args)
{
	struct cloak_hc_random *a = args;
	unsigned char buf[CLOAK_RANDOM_MAX];
	if (a->len > CLOAK_RANDOM_MAX) {
		a->ret = -CLOAK_E2BIG;
		return 0;
	}
	enum gm_status s = gm_check(vm->gm, gpa(a->buf), a->len);
	if (s != GM_OK) {
		a->ret = s == GM_EACCES ? -CLOAK_EACCES : -CLOAK_EFAULT;
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
const struct hc_def hc_random_def = { CLOAK_HC_RANDOM, "random", sizeof(struct cloak_hc_random),
				      hc_random };

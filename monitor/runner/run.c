/* SPDX-License-Identifier: ISC */
/* The vCPU loop: every KVM exit gets a diagnosis and a documented status. */
#include "runner.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include "device/device.h"
#include "device_link.h"
#include "diagnose.h"
#include "kvm/kvm_compat.h"
#include "process/signals.h"
#include "test_hooks.h"

static int on_io(struct runner *r)
{
	struct kvm_run *run = r->vcpu.run;
	/* KVM reports `outsl` like `outl` (count 1, the dword at rsi), so a
	 * single string write is a call too; a repeated one is not. */
	if (run->io.direction != KVM_EXIT_IO_OUT || run->io.count != 1)
		return outcome_fail(&r->out, CLOAK_EXIT_VIOLATION,
				    "guest %s I/O port 0x%x (%u bytes x %u): cloak's calls are "
				    "single 4-byte outl", run->io.direction == KVM_EXIT_IO_OUT ?
				    "wrote a repeated string to" : "read from",
				    run->io.port, run->io.size, run->io.count);
	if (run->io.port == CLOAK_PORT_NULL && run->io.size == 4)
		return 0;
	uint32_t value = 0;
	if (run->io.size == 4 && run->io.data_offset <= r->vcpu.run_size - 4)
		memcpy(&value, (const char *)run + run->io.data_offset, 4);
	return runner_call(r, run->io.port, run->io.size, value);
}

/* A call: answered here (own_calls.c), handed to the device process
 * (device_link.h) or, in one process, to the device code. */
int runner_call(struct runner *r, uint16_t port, unsigned size, uint32_t value)
{
	unsigned nr = 0;
	switch (call_side(port, size, &nr)) {
	case CALL_NONE:
		return call_refuse(&r->out, port, size);
	case CALL_UNKNOWN:
		return call_unknown(r->gm, &r->out, &r->counts, nr, value);
	case CALL_DEVICE:
		if (r->link && nr == CLOAK_HC_POLL && rc_poll_now(r, value))
			return r->out.stopped ? -1 : 0;
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

static int on_emulation_failure(struct runner *r)
{
	uint64_t rip = vcpu_rip(&r->vcpu);
	const struct kvm_run *run = r->vcpu.run;
	uint8_t bytes[15];
	uint64_t n = 0;
	enum gm_status unread = GM_OK;
	/* KVM hands over the bytes it tried to decode where it can
	 * (KVM_CAP_EXIT_ON_EMULATION_FAILURE): no need to read guest memory.
	 * Otherwise they are read like any other guest access (identity
	 * mapped), so a private page yields none. */
	if (run->emulation_failure.ndata >= 3 &&
	    (run->emulation_failure.flags & KVM_INTERNAL_ERROR_EMULATION_FLAG_INSTRUCTION_BYTES)) {
		n = run->emulation_failure.insn_size;
		if (n > sizeof bytes)
			n = sizeof bytes;
		memcpy(bytes, run->emulation_failure.insn_bytes, n);
	} else {
		n = CLOAK_PAGE_SIZE - rip % CLOAK_PAGE_SIZE;
		if (n > sizeof bytes)
			n = sizeof bytes;
		unread = gm_copy_from(r->gm, bytes, gpa(rip), n);
		if (unread != GM_OK)
			n = 0;
	}
	char why[200];
	run_emulation_diagnosis(bytes, n, unread, why, sizeof why);
	return outcome_fail(&r->out, CLOAK_EXIT_CRASH,
			    "KVM internal error (emulation) at rip 0x%llx: %s",
			    (unsigned long long)rip, why);
}

/* The guest byte at gpa, or -1 where it cannot be read (not shared, or
 * outside guest RAM): read like any other guest access. */
static int guest_byte(struct runner *r, uint64_t addr)
{
	uint8_t b;
	return gm_copy_from(r->gm, &b, gpa(addr), 1) == GM_OK ? b : -1;
}

static int on_hlt(struct runner *r)
{
	uint64_t rip = vcpu_rip(&r->vcpu);
	char msg[200];
	run_hlt_diagnosis(rip, rip ? guest_byte(r, rip - 1) : -1, guest_byte(r, rip), msg,
			  sizeof msg);
	return outcome_fail(&r->out, CLOAK_EXIT_VIOLATION, "%s", msg);
}

static int on_shutdown(struct runner *r)
{
	struct kvm_sregs s;
	bool reset = ioctl(r->vcpu.fd, KVM_GET_SREGS, &s) == 0 && !(s.cr0 & 1);
	char msg[300];
	run_shutdown_diagnosis(reset, vcpu_rip(&r->vcpu), r->last_rip, msg, sizeof msg);
	return outcome_fail(&r->out, CLOAK_EXIT_CRASH, "%s", msg);
}

static int on_exit_reason(struct runner *r)
{
	struct kvm_run *run = r->vcpu.run;
	switch (run->exit_reason) {
	case KVM_EXIT_IO:
		return on_io(r);
	case KVM_EXIT_HLT:
		return on_hlt(r);
	case KVM_EXIT_MMIO:
		return outcome_fail(&r->out, CLOAK_EXIT_VIOLATION,
				    "guest %s %u bytes at physical address 0x%llx, which is "
				    "not guest RAM (no MMIO devices) at rip 0x%llx",
				    run->mmio.is_write ? "wrote" : "read", run->mmio.len,
				    (unsigned long long)run->mmio.phys_addr,
				    (unsigned long long)vcpu_rip(&r->vcpu));
	case KVM_EXIT_SHUTDOWN:
		return on_shutdown(r);
	case KVM_EXIT_INTERNAL_ERROR:
		if (run->internal.suberror == KVM_INTERNAL_ERROR_EMULATION)
			return on_emulation_failure(r);
		return outcome_fail(&r->out, CLOAK_EXIT_CRASH,
				    "KVM internal error (suberror %u) at rip 0x%llx",
				    run->internal.suberror, (unsigned long long)vcpu_rip(&r->vcpu));
	case KVM_EXIT_FAIL_ENTRY:
		return outcome_fail(&r->out, CLOAK_EXIT_CRASH,
				    "KVM could not enter the guest (hardware reason 0x%llx)",
				    (unsigned long long)run->fail_entry.hardware_entry_failure_reason);
	case KVM_EXIT_MEMORY_FAULT:
		return outcome_fail(&r->out, CLOAK_EXIT_CRASH,
				    "KVM could not fault in guest memory (KVM_EXIT_MEMORY_FAULT)");
	default:
		return outcome_fail(&r->out, CLOAK_EXIT_CRASH,
				    "unexpected KVM exit reason %u at rip 0x%llx", run->exit_reason,
				    (unsigned long long)vcpu_rip(&r->vcpu));
	}
}

/* A stop request's handler records it and sets immediate_exit
 * (process/signals.h), so one that arrived is seen here before the next
 * KVM_RUN, or ends the KVM_RUN it interrupts. */
static int check_stop(struct runner *r)
{
	if (signals_watchdog_fired())
		return outcome_fail(&r->out, CLOAK_EXIT_WATCHDOG,
				    "watchdog: --timeout expired, guest stopped at rip 0x%llx",
				    (unsigned long long)vcpu_rip(&r->vcpu));
	int sig = signals_stop_signal();
	if (sig)
		return outcome_fail(&r->out, CLOAK_EXIT_INTERRUPTED,
				    "interrupted by signal %d (%s), guest stopped", sig,
				    strsignal(sig));
	return 0;
}

int runner_run(struct runner *r)
{
	while (!r->out.stopped) {
		if (check_stop(r))
			break;
		if (ioctl(r->vcpu.fd, KVM_RUN, 0) < 0) {
			if (errno == EINTR || errno == EAGAIN) {
				r->vcpu.run->immediate_exit = 0;
				continue;
			}
			char msg[300];
			int st = run_error_diagnosis(errno, gm_backend(r->gm), msg, sizeof msg);
			outcome_fail(&r->out, st, "%s", msg);
			break;
		}
		test_hooks_on_exit(r);
		if (on_exit_reason(r) != 0)
			break;
		if (r->vcpu.run->kvm_valid_regs & KVM_SYNC_X86_REGS)
			r->last_rip = r->vcpu.run->s.regs.regs.rip;
	}
	return r->out.status;
}

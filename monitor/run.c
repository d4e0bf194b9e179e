/* The vCPU loop: every KVM exit gets a diagnosis and a documented status. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include "hypercall.h"
#include "kvm_compat.h"
#include "vm.h"
#include "watchdog.h"

static uint64_t guest_rip(const struct vm *vm)
{
	struct kvm_regs r;
	return ioctl(vm->vcpu_fd, KVM_GET_REGS, &r) == 0 ? r.rip : 0;
}

static int on_io(struct vm *vm)
{
	struct kvm_run *run = vm->run;
	if (run->io.direction != KVM_EXIT_IO_OUT || run->io.count != 1)
		return vm_fail(vm, CLOAK_EXIT_VIOLATION,
			       "guest %s I/O port 0x%x (%u bytes x %u): cloak's calls are "
			       "single 4-byte outl", run->io.direction == KVM_EXIT_IO_OUT ?
			       "wrote a string to" : "read from",
			       run->io.port, run->io.size, run->io.count);
	if (run->io.port == CLOAK_PORT_NULL && run->io.size == 4)
		return 0;
	uint32_t value = 0;
	if (run->io.size == 4 && run->io.data_offset <= vm->run_size - 4)
		memcpy(&value, (const char *)run + run->io.data_offset, 4);
	return hc_dispatch(vm, run->io.port, run->io.size, value);
}

static int on_exit_reason(struct vm *vm)
{
	struct kvm_run *run = vm->run;
	switch (run->exit_reason) {
	case KVM_EXIT_IO:
		return on_io(vm);
	case KVM_EXIT_HLT:
		return vm_fail(vm, CLOAK_EXIT_VIOLATION,
			       "guest halted (hlt at rip 0x%llx) without calling exit",
			       (unsigned long long)guest_rip(vm));
	case KVM_EXIT_MMIO:
		return vm_fail(vm, CLOAK_EXIT_VIOLATION,
			       "guest %s %u bytes at physical address 0x%llx, which is "
			       "not guest RAM (no MMIO devices) at rip 0x%llx",
			       run->mmio.is_write ? "wrote" : "read", run->mmio.len,
			       (unsigned long long)run->mmio.phys_addr,
			       (unsigned long long)guest_rip(vm));
	case KVM_EXIT_SHUTDOWN:
		return vm_fail(vm, CLOAK_EXIT_CRASH,
			       "guest triple-faulted (KVM_EXIT_SHUTDOWN) at rip 0x%llx: "
			       "an exception arrived with no usable IDT or stack",
			       (unsigned long long)guest_rip(vm));
	case KVM_EXIT_INTERNAL_ERROR:
		return vm_fail(vm, CLOAK_EXIT_CRASH,
			       "KVM internal error (suberror %u) at rip 0x%llx%s",
			       run->internal.suberror, (unsigned long long)guest_rip(vm),
			       run->internal.suberror == KVM_INTERNAL_ERROR_EMULATION ?
			       ": instruction emulation failed (this host emulates guest "
			       "code and has no SSE arithmetic: build with "
			       "-mgeneral-regs-only)" : "");
	case KVM_EXIT_FAIL_ENTRY:
		return vm_fail(vm, CLOAK_EXIT_CRASH, "KVM could not enter the guest "
			       "(hardware reason 0x%llx)", (unsigned long long)
			       run->fail_entry.hardware_entry_failure_reason);
	case KVM_EXIT_MEMORY_FAULT:
		return vm_fail(vm, CLOAK_EXIT_CRASH, "KVM could not fault in guest memory "
			       "(KVM_EXIT_MEMORY_FAULT)");
	default:
		return vm_fail(vm, CLOAK_EXIT_CRASH, "unexpected KVM exit reason %u at "
			       "rip 0x%llx", run->exit_reason, (unsigned long long)guest_rip(vm));
	}
}

/* Checks the watchdog and signals; returns -1 if the VM must stop. */
static int check_stop(struct vm *vm)
{
	if (watchdog_fired())
		return vm_fail(vm, CLOAK_EXIT_WATCHDOG, "watchdog: --timeout expired, "
			       "guest stopped at rip 0x%llx", (unsigned long long)guest_rip(vm));
	int sig = watchdog_signal();
	if (sig)
		return vm_fail(vm, CLOAK_EXIT_INTERRUPTED, "interrupted by signal %d (%s), "
			       "guest stopped", sig, strsignal(sig));
	return 0;
}

int run_error_diagnosis(int err, enum gm_backend backend, char *msg, size_t len)
{
	if (err == EFAULT && backend == GM_BACKEND_SECRET) {
		/* Mainline KVM on VMX/SVM faults guest pages in with GUP, which
		 * refuses secretmem; the emulator on hosts like these reads
		 * through the monitor's mapping instead, so it works here. */
		snprintf(msg, len, "KVM_RUN failed with EFAULT: this host's KVM cannot "
			 "run guests from memfd_secret memory (GUP refuses it on VMX/SVM "
			 "hosts): use --memory=gmem");
		return CLOAK_EXIT_NOHOST;
	}
	snprintf(msg, len, "KVM_RUN failed: %s", strerror(err));
	return CLOAK_EXIT_CRASH;
}

int vm_run(struct vm *vm)
{
	while (!vm->stopped) {
		if (check_stop(vm))
			break;
		if (ioctl(vm->vcpu_fd, KVM_RUN, 0) < 0) {
			if (errno == EINTR || errno == EAGAIN) {
				vm->run->immediate_exit = 0;
				continue;
			}
			char msg[256];
			int st = run_error_diagnosis(errno, gm_backend(vm->gm), msg, sizeof msg);
			vm_fail(vm, st, "%s", msg);
			break;
		}
		if (on_exit_reason(vm) != 0)
			break;
		/* A handler may have slept (POLL) through a signal. */
		if (check_stop(vm))
			break;
	}
	return vm->exit_status;
}

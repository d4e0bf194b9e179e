/* SPDX-License-Identifier: ISC */
/*
 * The sandbox's allowlists, written with libseccomp: the source of truth
 * for the filters. Not part of the monitor: process/sandbox_gen.c builds
 * them at build time and exports the BPF libseccomp compiles them to, which
 * the monitor loads as it is (process/sandbox.c), so no filter is compiled
 * at each start.
 */
#include "sandbox_rules.h"

#include <errno.h>
#include <linux/kvm.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "mem/cachestat.h"
#include "mem/pagemap_scan.h"

struct allow {
	int nr;
	const char *caller; /* who needs it once the guest runs */
};

/* What every process that holds a VM or serves its calls needs: the
 * single monitor, the split monitor's runner and its device process each
 * take this list and their own below, so a call the wipe or the stop
 * requests need is added once for all of them. */
static const struct allow process_allow[] = {
	{ SCMP_SYS(rt_sigreturn), "process/signals.c: return from a stop-request handler" },
	{ SCMP_SYS(rt_sigprocmask), "process/signals.c: stop requests blocked around a sleep" },
	{ SCMP_SYS(clock_gettime), "runner/calls.c: WALLTIME, x86/vcpu_wipe.c: deadline (vDSO fallback)" },
	{ SCMP_SYS(read), "device/channel.c: channel reads; mem/wipe.c: pagemap" },
	{ SCMP_SYS(write), "device/call_console.c: CONSOLE; channel writes; diagnostics on stderr" },
	{ SCMP_SYS(pread64), "device/block.c: block reads; mem/wipe.c: /proc/self/pagemap" },
	{ SCMP_SYS(lseek), "mem/wipe.c: a memfd's data ranges (SEEK_DATA/SEEK_HOLE)" },
	{ SCMP_SYS(newfstatat), "stdio: the first write to a stream sizes its buffer" },
	{ SCMP_SYS(fstat), "stdio: the first write to a stream sizes its buffer" },
	{ SCMP_SYS(close), "device/: dropped connections; release at exit" },
	{ SCMP_SYS(brk), "malloc" },
	{ SCMP_SYS(munmap), "malloc; mem/: giving memory up, release of guest memory" },
	{ SCMP_SYS(madvise), "free: trimming the heap" },
	{ SCMP_SYS(mincore), "mem/wipe.c: resident pages where pagemap cannot tell" },
	{ CLOAK_NR_cachestat, "mem/wipe.c: a guest_memfd's touched regions" },
	{ SCMP_SYS(exit_group), "the monitor's exit" },
	{ SCMP_SYS(getpid), "abort(), sanitizer reports; process/signals.c: whose SIGABRT" },
	{ SCMP_SYS(gettid), "abort() and sanitizer reports" },
	{ SCMP_SYS(tgkill), "abort() and sanitizer reports" },
};

/* The calls the runner answers itself (runner/calls.c): the single
 * monitor's and the runner's. */
static const struct allow runner_calls_allow[] = {
	{ SCMP_SYS(getrandom), "runner/calls.c: RANDOM" },
};

/* The calls and devices: the single monitor's and the device process's. */
static const struct allow devices_allow[] = {
	{ SCMP_SYS(ppoll), "device/waitset.c: POLL without devices sleeps; the device "
			     "process's idle wait and its readiness page" },
	{ SCMP_SYS(epoll_pwait2), "device/waitset.c: POLL waits for channels" },
	{ SCMP_SYS(epoll_ctl), "device/waitset.c: the channels to wait for" },
	{ SCMP_SYS(pwrite64), "device/block.c: block writes" },
	{ SCMP_SYS(fdatasync), "device/block.c: FLUSH" },
	{ SCMP_SYS(accept4), "device/channel.c: a listen: channel's next peer" },
	{ SCMP_SYS(sendto), "process/broker.c: asking the broker to connect" },
	{ SCMP_SYS(recvmsg), "process/broker.c: the broker's answer and descriptor" },
};

/* ioctl requests once the guest runs: KVM ones on the vCPU, and one on
 * pagemap. No mremap either: it
 * could stretch a mapping of shared guest pages over the private ones the
 * monitor gave up (realloc copies instead). */
static const unsigned long kvm_requests[] = {
	KVM_RUN,         /* runner/run.c, x86/vcpu_wipe.c */
	KVM_GET_REGS,    /* kvm/vcpu.c: rip for diagnostics */
	KVM_GET_SREGS,   /* x86/vcpu_wipe.c */
	KVM_SET_SREGS,   /* x86/vcpu_wipe.c */
	KVM_SET_REGS,    /* x86/vcpu_wipe.c */
	KVM_GET_VCPU_EVENTS, /* x86/vcpu_wipe.c */
	KVM_SET_VCPU_EVENTS, /* x86/vcpu_wipe.c */
	CLOAK_PAGEMAP_SCAN, /* mem/wipe.c: present pages, from /proc/self/pagemap */
};

static const struct allow broker_allow[] = {
	{ SCMP_SYS(recvfrom), "serve(): the monitor's request" },
	{ SCMP_SYS(sendmsg), "reply(): the answer and a descriptor" },
	{ SCMP_SYS(connect), "serve(): connecting a connect: channel" },
	{ SCMP_SYS(close), "serve(): its copy of the connection" },
	{ SCMP_SYS(newfstatat), "serve(): is the socket file still the monitor's?" },
	{ SCMP_SYS(unlink), "serve(): removing the monitor's listening sockets" },
	{ SCMP_SYS(rt_sigreturn), "signal delivery" },
	{ SCMP_SYS(exit_group), "_exit()" },
	{ SCMP_SYS(write), "diagnostics on stderr" },
	{ SCMP_SYS(sigaltstack), "sanitizer builds: ASan unpoisons stacks before a call that "
				 "does not return (serve(): _exit)" },
};

/* The split monitor's runner (runner/device_link.h): no socket, no channel
 * or block I/O, no console; the hand-off is a futex on a shared page. */
static const struct allow runner_allow[] = {
	{ SCMP_SYS(futex), "handoff/handoff.c: the hand-off's wake-ups" },
	{ SCMP_SYS(wait4), "runner/device_link.c: is the device process still there?" },
	{ SCMP_SYS(pidfd_send_signal), "runner/device_link.c: cut the device process's sleep, "
					"or end it (it holds a pidfd of no other)" },
	{ SCMP_SYS(ppoll), "runner/device_link.c: waiting on the pidfd for the device process's exit" },
	{ SCMP_SYS(nanosleep), "runner/device_link.c: waiting for the device process to finish" },
	{ SCMP_SYS(clock_nanosleep), "runner/device_link.c: the same, through nanosleep()" },
};

/* The split monitor's device process: every call but the KVM ones. */
static const struct allow devices_extra[] = {
	{ SCMP_SYS(futex), "handoff/handoff.c: the hand-off's wake-ups" },
	{ SCMP_SYS(sigaltstack), "sanitizer builds: ASan unpoisons stacks before a call that "
				 "does not return (device/serve.c: finish, _exit)" },
};

static int add_all(scmp_filter_ctx ctx, const struct allow *a, size_t n)
{
	int r = 0;
	for (size_t i = 0; i < n && r == 0; i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, a[i].nr, 0);
	return r;
}

/* The run loop's KVM requests, and no other ioctl. */
static int allow_kvm_requests(scmp_filter_ctx ctx)
{
	int r = 0;
	for (size_t i = 0; i < sizeof kvm_requests / sizeof kvm_requests[0] && r == 0; i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
				     SCMP_A1(SCMP_CMP_EQ, kvm_requests[i], 0));
	return r;
}

/* malloc maps memory; never executable memory. */
static int no_exec_memory(scmp_filter_ctx ctx)
{
	int r = 0;
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1,
				     SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1,
				     SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	return r;
}

#define ADD_ALL(ctx, list) add_all(ctx, list, sizeof list / sizeof list[0])

int sandbox_rules_monitor(scmp_filter_ctx ctx)
{
	int r = ADD_ALL(ctx, process_allow);
	if (r == 0)
		r = ADD_ALL(ctx, runner_calls_allow);
	if (r == 0)
		r = ADD_ALL(ctx, devices_allow);
	if (r == 0)
		r = allow_kvm_requests(ctx);
	return r ? r : no_exec_memory(ctx);
}

int sandbox_rules_runner(scmp_filter_ctx ctx)
{
	int r = ADD_ALL(ctx, process_allow);
	if (r == 0)
		r = ADD_ALL(ctx, runner_calls_allow);
	if (r == 0)
		r = ADD_ALL(ctx, runner_allow);
	if (r == 0)
		r = allow_kvm_requests(ctx);
	return r ? r : no_exec_memory(ctx);
}

int sandbox_rules_devices(scmp_filter_ctx ctx)
{
	int r = ADD_ALL(ctx, process_allow);
	if (r == 0)
		r = ADD_ALL(ctx, devices_allow);
	if (r == 0)
		r = ADD_ALL(ctx, devices_extra);
	/* No ioctl at all; memory for malloc only: anonymous (fd -1), never
	 * executable, so no descriptor of guest memory can be mapped again. */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 2,
				     SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0),
				     SCMP_A4(SCMP_CMP_MASKED_EQ, 0xffffffffu, 0xffffffffu));
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1,
				     SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	return r;
}

int sandbox_rules_broker(scmp_filter_ctx ctx)
{
	int r = ADD_ALL(ctx, broker_allow);
	/* Only Unix stream sockets, for connect: channels. */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
				     SCMP_A0(SCMP_CMP_EQ, AF_UNIX, 0));
	return r;
}

/* SPDX-License-Identifier: ISC */
/* Stop requests and fatal signals; see signals.h. */
#include "signals.h"

#include <errno.h>
#include <linux/kvm.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "exit_status.h"

static struct kvm_run *volatile stop_run;
static volatile sig_atomic_t watchdog_fired;
static volatile sig_atomic_t stop_signal;
static bool watchdog_armed;
static sigset_t requests;  /* the stop requests */
static sigset_t wait_mask; /* the mask to sleep with: requests unblocked */
static bool (*volatile fault_wipe)(void *);
static void *volatile fault_wipe_arg;
static volatile sig_atomic_t in_fault; /* a fault inside the fault handler */

/* Signals whose default action ends the process and that arrive from
 * outside (kill, timers, the terminal, resource limits): each is a
 * request to stop, answered with the wipe and CLOAK_EXIT_INTERRUPTED. */
static const int request_signals[] = {
	SIGALRM, SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGTRAP,
	SIGVTALRM, SIGPROF, SIGIO, SIGPWR, SIGSTKFLT, SIGXCPU, SIGSYS,
};
/* Raised by the CPU for the monitor's own faults, or SIGABRT from the
 * monitor's own abort() (a failed check in the C library); sent by kill,
 * each is a stop request like the others. */
static const int fault_signals[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };

static void on_request(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	/* Only our own timer is the watchdog; a SIGALRM sent by someone else
	 * is a stop request like the others. */
	if (sig == SIGALRM && watchdog_armed && si && si->si_code == SI_TIMER)
		watchdog_fired = 1;
	else if (!stop_signal)
		stop_signal = sig;
	struct kvm_run *r = stop_run;
	if (r)
		r->immediate_exit = 1;
}

/* Sent by another process (kill, sigqueue), not raised by this one: the
 * CPU's faults have si_code > 0, abort() sends with tgkill from our pid. */
static bool from_outside(const siginfo_t *si)
{
	return si->si_code <= 0 && si->si_pid != getpid();
}

/* Async-signal-safe: a fixed message, the wipe, _exit. */
static void on_fault(int sig, siginfo_t *si, void *uc)
{
	if (from_outside(si)) {
		on_request(sig, si, uc);
		return;
	}
	/* The handler stays installed (a fault sent from outside must not
	 * leave the next real one unhandled), so a fault inside it ends here. */
	if (in_fault)
		_exit(CLOAK_EXIT_INTERNAL);
	in_fault = 1;
	static const char wiped[] = "cloak: internal error: the monitor faulted; guest memory "
				    "wiped, exiting\n";
	/* Memory given up (mem/guestmem.c) is not the monitor's to wipe: the
	 * kernel frees it when the VM closes, as it does after SIGKILL. */
	static const char given_up[] = "cloak: internal error: the monitor faulted; it no longer "
				       "maps private guest memory, which the kernel frees at exit "
				       "unwiped; exiting\n";
	bool (*wipe)(void *) = fault_wipe;
	bool gave_up = wipe && !wipe(fault_wipe_arg);
	ssize_t w = gave_up ? write(STDERR_FILENO, given_up, sizeof given_up - 1)
			    : write(STDERR_FILENO, wiped, sizeof wiped - 1);
	(void)w;
	_exit(CLOAK_EXIT_INTERNAL);
}

int signals_init(struct fail *f)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_request; /* no SA_RESTART: waits return EINTR */
	sa.sa_flags = SA_SIGINFO;
	sigfillset(&sa.sa_mask);
	sigemptyset(&requests);
	for (size_t i = 0; i < sizeof request_signals / sizeof request_signals[0]; i++)
		sigaddset(&requests, request_signals[i]);
	for (int s = SIGRTMIN; s <= SIGRTMAX; s++)
		sigaddset(&requests, s);
	for (int s = 1; s < NSIG; s++) {
		if (sigismember(&requests, s) != 1 || sigaction(s, &sa, NULL) == 0)
			continue;
		/* A real-time signal the environment keeps for itself (valgrind
		 * does) cannot be sent to us by anyone else either. */
		if (s >= SIGRTMIN && errno == EINVAL) {
			sigdelset(&requests, s);
			continue;
		}
		return fail_set(f, CLOAK_EXIT_INTERNAL, "cannot handle signal %d: %s", s,
				strerror(errno));
	}
	/* A closed stdout or channel peer must be an error the guest sees, and
	 * a write past RLIMIT_FSIZE an EFBIG, not a signal that ends the
	 * monitor before it wipes guest memory. */
	signal(SIGPIPE, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN);
	struct sigaction fa;
	memset(&fa, 0, sizeof fa);
	fa.sa_sigaction = on_fault;
	fa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigfillset(&fa.sa_mask);
	for (size_t i = 0; i < sizeof fault_signals / sizeof fault_signals[0]; i++)
		if (sigaction(fault_signals[i], &fa, NULL) != 0)
			return fail_set(f, CLOAK_EXIT_INTERNAL, "cannot handle signal %d: %s",
					fault_signals[i], strerror(errno));
	if (sigprocmask(SIG_SETMASK, NULL, &wait_mask) != 0)
		return fail_set(f, CLOAK_EXIT_INTERNAL, "sigprocmask: %s", strerror(errno));
	for (int s = 1; s < NSIG; s++)
		if (sigismember(&requests, s) == 1)
			sigdelset(&wait_mask, s);
	return 0;
}

void signals_set_run(struct kvm_run *run)
{
	stop_run = run;
	if (run && (watchdog_fired || stop_signal))
		run->immediate_exit = 1;
}

int signals_arm_watchdog(uint64_t ms, struct fail *f)
{
	if (ms == 0)
		return 0;
	timer_t t;
	struct sigevent ev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGALRM };
	struct itimerspec its = { .it_value = { .tv_sec = (time_t)(ms / 1000),
						.tv_nsec = (long)(ms % 1000) * 1000000 } };
	watchdog_armed = true;
	if (timer_create(CLOCK_MONOTONIC, &ev, &t) != 0 || timer_settime(t, 0, &its, NULL) != 0)
		return fail_set(f, CLOAK_EXIT_INTERNAL, "cannot set up the watchdog: %s",
				strerror(errno));
	return 0;
}

bool signals_wait_begin(void)
{
	sigprocmask(SIG_BLOCK, &requests, NULL);
	return watchdog_fired || stop_signal;
}

const sigset_t *signals_wait_mask(void)
{
	return &wait_mask;
}

void signals_wait_end(void)
{
	sigprocmask(SIG_UNBLOCK, &requests, NULL);
}

bool signals_watchdog_fired(void)
{
	return watchdog_fired;
}

int signals_stop_signal(void)
{
	return stop_signal;
}

void signals_set_fault_wipe(bool (*wipe)(void *arg), void *arg)
{
	fault_wipe = NULL;
	fault_wipe_arg = arg;
	fault_wipe = wipe;
}

/* Watchdog and termination signals; see watchdog.h. */
#include "watchdog.h"

#include <linux/kvm.h>
#include <signal.h>
#include <string.h>
#include <time.h>

static struct kvm_run *volatile wd_run;
static volatile sig_atomic_t wd_fired;
static volatile sig_atomic_t wd_signal;

static void on_signal(int sig)
{
	if (sig == SIGALRM)
		wd_fired = 1;
	else
		wd_signal = sig;
	struct kvm_run *r = wd_run;
	if (r)
		r->immediate_exit = 1;
}

int watchdog_init(struct kvm_run *run)
{
	wd_run = run;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal; /* no SA_RESTART: KVM_RUN and sleeps return EINTR */
	sigemptyset(&sa.sa_mask);
	int sigs[] = { SIGALRM, SIGINT, SIGTERM, SIGHUP };
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		if (sigaction(sigs[i], &sa, NULL) != 0)
			return -1;
	return 0;
}

int watchdog_arm(uint64_t ms)
{
	if (ms == 0)
		return 0;
	timer_t t;
	struct sigevent ev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGALRM };
	if (timer_create(CLOCK_MONOTONIC, &ev, &t) != 0)
		return -1;
	struct itimerspec its = { .it_value = { .tv_sec = (time_t)(ms / 1000),
						.tv_nsec = (long)(ms % 1000) * 1000000 } };
	return timer_settime(t, 0, &its, NULL);
}

bool watchdog_fired(void)
{
	return wd_fired;
}

int watchdog_signal(void)
{
	return wd_signal;
}

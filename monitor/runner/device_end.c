/* SPDX-License-Identifier: ISC */
/* The end of the device process, as the runner sees to it; see
 * device_link.h (link_end). */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "device_link.h"

/* How long the runner lets the device process finish (dump, close). */
#define LINK_FINISH_MS 5000

/* Waits until the device process has exited, or ms have passed. Its
 * pidfd turns readable the moment it exits, so the runner sleeps exactly
 * that long. Without a pidfd (valgrind knows none), it looks often at
 * first, then in 10 ms steps. */
static bool reaped(const struct device_link *l, int ms)
{
	struct timespec now, end;
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += ms / 1000;
	end.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (end.tv_nsec >= 1000000000L) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
	long step = 20000; /* ns */
	for (;;) {
		pid_t w = waitpid(l->pid, NULL, WNOHANG);
		if (w == l->pid || (w < 0 && errno == ECHILD))
			return true;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec))
			return false;
		if (l->pidfd >= 0) {
			/* A stop signal ends the sleep early (EINTR): look again. */
			struct timespec left = { end.tv_sec - now.tv_sec, end.tv_nsec - now.tv_nsec };
			if (left.tv_nsec < 0) {
				left.tv_sec--;
				left.tv_nsec += 1000000000L;
			}
			struct pollfd pfd = { .fd = l->pidfd, .events = POLLIN };
			ppoll(&pfd, 1, &left, NULL);
			continue;
		}
		struct timespec tick = { 0, step };
		nanosleep(&tick, NULL);
		if (step < 10000000L)
			step *= 2;
	}
}

void link_end(struct device_link *l)
{
	if (!l)
		return;
	if (l->pid >= 0) {
		/* A device process that still waits for a request gets one to
		 * finish; one still in a call was sent SIGTERM (exchange). */
		l->pending.op = HANDOFF_FINISH;
		handoff_send(&l->h, &l->pending);
		l->pending.nchanges = 0;
		if (!reaped(l, LINK_FINISH_MS)) {
			fprintf(stderr, "cloak: device process did not finish in %d ms: killed\n",
				LINK_FINISH_MS);
			link_signal(l, SIGKILL);
			waitpid(l->pid, NULL, 0);
		}
	}
	if (l->pidfd >= 0)
		close(l->pidfd);
	if (l->maps_fd >= 0)
		close(l->maps_fd);
	l->pid = l->pidfd = l->maps_fd = -1;
}

/* SPDX-License-Identifier: ISC */
/* The POLL wait; see waitset.h. */
#include "waitset.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <unistd.h>
#include <stdbool.h>
#include <sys/epoll.h>
#include <time.h>

#include "process/signals.h"

static struct timespec *to_timespec(uint64_t ns, struct timespec *ts)
{
	if (ns == UINT64_MAX)
		return NULL;
	ts->tv_sec = (time_t)(ns / 1000000000ull);
	ts->tv_nsec = (long)(ns % 1000000000ull);
	return ts;
}

/* Whether channel i's registration in the epoll set still exists: a
 * closed connection left the set by itself, and its number may since
 * belong to another descriptor, which must not be touched. */
static bool registered(const struct devices *d, unsigned i)
{
	const struct channel *c = &d->chan[i];
	return d->watched_fd[i] >= 0 &&
	       (d->watched_fd[i] == c->listen_fd || d->watched_gen[i] == c->conn_gen);
}

/* Registers exactly `events` for channel i's `fd` (fd -1: nothing). */
static int watch(struct devices *d, unsigned i, int fd, uint32_t events)
{
	bool reg = registered(d, i);
	if (reg && (d->watched_fd[i] != fd || fd < 0)) {
		epoll_ctl(d->epoll_fd, EPOLL_CTL_DEL, d->watched_fd[i], NULL);
		reg = false;
	}
	if (!reg)
		d->watched_fd[i] = -1;
	if (fd < 0 || (reg && d->watched[i] == events))
		return 0;
	struct epoll_event ev = { .events = events, .data.u32 = i };
	if (epoll_ctl(d->epoll_fd, reg ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev))
		return -1;
	d->watched_fd[i] = fd;
	d->watched_gen[i] = d->chan[i].conn_gen;
	d->watched[i] = events;
	return 0;
}

static int64_t sleep_only(uint64_t timeout_ns)
{
	struct timespec ts;
	if (timeout_ns == 0)
		return 0;
	/* EINTR means a stop request arrived: the run loop sees it. */
	if (!signals_wait_begin())
		ppoll(NULL, 0, to_timespec(timeout_ns, &ts), signals_wait_mask());
	signals_wait_end();
	return 0;
}

int64_t waitset_wait(struct devices *d, uint64_t timeout_ns, uint64_t wait_set,
		     uint64_t *ready)
{
	*ready = 0;
	if (!d)
		return wait_set ? -CLOAK_ENOENT : sleep_only(timeout_ns);
	uint64_t blocks = d->nblock ? (1ull << d->nblock) - 1 : 0;
	uint64_t known = blocks;
	for (unsigned i = 0; i < d->nchan; i++)
		if (d->chan[i].opened)
			known |= CLOAK_CHAN_POLL_BIT(i);
	if (wait_set & ~known)
		return -CLOAK_ENOENT; /* a device that does not exist or is not open */
	uint64_t now = wait_set & blocks; /* block I/O never waits */
	for (unsigned i = 0; i < d->nchan; i++) {
		int fd = -1;
		uint32_t ev = 0;
		bool want = wait_set & CLOAK_CHAN_POLL_BIT(i);
		if (want && channel_wait_for(&d->chan[i], &fd, &ev))
			now |= CLOAK_CHAN_POLL_BIT(i);
		if (watch(d, i, want ? fd : -1, ev))
			return -CLOAK_EIO;
	}
	struct timespec ts = { 0, 0 };
	struct epoll_event evs[CLOAK_CHAN_MAX];
	/* Even when something is ready now, collect what else is (no wait). */
	bool sleep = !now && timeout_ns;
	int n = 0;
	if (!sleep || !signals_wait_begin())
		n = epoll_pwait2(d->epoll_fd, evs, CLOAK_CHAN_MAX,
				 sleep ? to_timespec(timeout_ns, &ts) : &ts, signals_wait_mask());
	if (sleep)
		signals_wait_end();
	for (int k = 0; k < n; k++)
		if (evs[k].data.u32 < d->nchan)
			now |= CLOAK_CHAN_POLL_BIT(evs[k].data.u32);
	*ready = now & wait_set;
	return 0;
}

/* The devices that exist (block devices) or are open (channels). */
static uint64_t known_set(const struct devices *d)
{
	uint64_t known = d->nblock ? (1ull << d->nblock) - 1 : 0;
	for (unsigned i = 0; i < d->nchan; i++)
		if (d->chan[i].opened)
			known |= CLOAK_CHAN_POLL_BIT(i);
	return known;
}

/* What each open channel that is not ready now waits for, as poll(2) has
 * it; fills fds from `at` and returns the count, and the channels ready
 * now in *ready. */
static unsigned waits(const struct devices *d, struct pollfd *fds, unsigned at, uint64_t *ready,
		      unsigned *chan_of)
{
	unsigned n = at;
	for (unsigned i = 0; i < d->nchan; i++) {
		int fd;
		uint32_t ev;
		if (!d->chan[i].opened)
			continue;
		if (channel_wait_for(&d->chan[i], &fd, &ev)) {
			*ready |= CLOAK_CHAN_POLL_BIT(i);
		} else if (fd >= 0) {
			fds[n] = (struct pollfd){ .fd = fd,
				.events = (short)((ev & EPOLLIN ? POLLIN : 0) |
						  (ev & EPOLLRDHUP ? POLLRDHUP : 0) |
						  (ev & EPOLLOUT ? POLLOUT : 0)) };
			chan_of[n++] = i;
		}
	}
	return n - at;
}

void waitset_readiness(struct devices *d, uint64_t *known, uint64_t *ready)
{
	*known = *ready = 0;
	if (!d)
		return;
	*known = known_set(d);
	*ready = d->nblock ? (1ull << d->nblock) - 1 : 0; /* block I/O never waits */
	struct pollfd fds[CLOAK_CHAN_MAX];
	unsigned chan_of[CLOAK_CHAN_MAX];
	unsigned n = waits(d, fds, 0, ready, chan_of);
	struct timespec zero = { 0, 0 };
	if (n && ppoll(fds, n, &zero, NULL) > 0)
		for (unsigned k = 0; k < n; k++)
			if (fds[k].revents)
				*ready |= CLOAK_CHAN_POLL_BIT(chan_of[k]);
}

bool waitset_idle(struct devices *d, int wake_fd, uint64_t published)
{
	struct pollfd fds[CLOAK_CHAN_MAX + 1] = { { .fd = wake_fd, .events = POLLIN } };
	unsigned chan_of[CLOAK_CHAN_MAX + 1];
	uint64_t ready = 0;
	unsigned got = d ? waits(d, fds, 1, &ready, chan_of) : 0, n = 1;
	/* A channel already published ready stays so until the guest's next
	 * request: polled again, its socket (data the guest has not read yet)
	 * would end every sleep at once, and this process would spin on the
	 * CPU the guest needs until the guest reads. */
	for (unsigned k = 1; k < 1 + got; k++)
		if (!(published & CLOAK_CHAN_POLL_BIT(chan_of[k]))) {
			fds[n] = fds[k];
			chan_of[n++] = chan_of[k];
		}
	/* A stop request ends the sleep (EINTR), one that came before it is
	 * seen now: the request that follows is answered with it. */
	if (!signals_wait_begin())
		ppoll(fds, n, NULL, signals_wait_mask());
	signals_wait_end();
	uint64_t drained;
	bool woken = read(wake_fd, &drained, sizeof drained) == sizeof drained;
	return woken;
}

/* SPDX-License-Identifier: ISC */
/* The hand-off protocol; see handoff.h. */
#include "handoff.h"

#include <linux/futex.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cloak/abi.h"

/* With more than one CPU, each side spins this long on the other's number
 * before it sleeps (in the SVM tier's VM with two vCPUs the null call went
 * from 2.45x to 1.43x one process; docs/design.md). */
#define HANDOFF_SPIN_NS 200000l

long handoff_futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
	/* Not FUTEX_PRIVATE_FLAG: the word is in memory two processes share. */
	return syscall(SYS_futex, (uint32_t *)addr, op, val, ts, NULL, 0);
}

bool handoff_spin(const struct handoff *h, _Atomic uint32_t *word, uint32_t old)
{
	if (!h->spin)
		return false;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned i = 1;; i++) {
		if (atomic_load_explicit(word, memory_order_acquire) != old)
			return true;
		__builtin_ia32_pause();
		if (i % 64 == 0) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			if ((t.tv_sec - t0.tv_sec) * 1000000000l + t.tv_nsec - t0.tv_nsec >
			    HANDOFF_SPIN_NS)
				return false;
		}
	}
}

void handoff_sleep(_Atomic uint32_t *word, _Atomic uint32_t *sleeping, uint32_t old,
		     const struct timespec *ts)
{
	atomic_store(sleeping, 1);
	if (atomic_load(word) == old)
		handoff_futex(word, FUTEX_WAIT, old, ts);
	atomic_store(sleeping, 0);
}

void handoff_publish(_Atomic uint32_t *word, _Atomic uint32_t *sleeping, uint32_t seq)
{
	atomic_store(word, seq);
	if (atomic_load(sleeping))
		handoff_futex(word, FUTEX_WAKE, 1, NULL);
}

/* Each request's token: a reply made before its request was cannot echo
 * it. Not a secret from the device process, which reads it with the
 * request. */
static uint64_t next_token(struct handoff *h)
{
	h->token_state ^= h->token_state << 13;
	h->token_state ^= h->token_state >> 7;
	h->token_state ^= h->token_state << 17;
	return h->token_state;
}

bool handoff_unsolicited(const struct handoff *h)
{
	return atomic_load_explicit(&h->page->rep_seq, memory_order_acquire) != h->seq;
}

void handoff_send(struct handoff *h, const struct handoff_request *r)
{
	struct handoff_page *p = h->page;
	size_t used = offsetof(struct handoff_request, change) +
		      r->nchanges * sizeof r->change[0];
	memcpy(&p->req, r, used);
	h->token = next_token(h);
	p->req.token = h->token;
	h->seq++;
	/* The device process sleeps in a poll of its channels and wake_fd,
	 * not in a futex: write the eventfd where it sleeps (the Dekker pair
	 * of handoff_publish). */
	atomic_store(&p->req_seq, h->seq);
	if (atomic_load(&p->req_sleeping)) {
		uint64_t one = 1;
		ssize_t w = write(h->wake_fd, &one, sizeof one);
		(void)w; /* an eventfd write fails only if the counter is full: it wakes anyway */
	}
}

bool handoff_await(struct handoff *h, const struct timespec *slice)
{
	struct handoff_page *p = h->page;
	if (handoff_spin(h, &p->rep_seq, h->seq - 1))
		return true;
	handoff_sleep(&p->rep_seq, &p->rep_sleeping, h->seq - 1, slice);
	return atomic_load_explicit(&p->rep_seq, memory_order_acquire) != h->seq - 1;
}

bool handoff_status_in_shape(int32_t st)
{
	return (st >= 0 && st <= CLOAK_EXIT_STATUS_MAX) || st == CLOAK_EXIT_VIOLATION ||
	       st == CLOAK_EXIT_ABORT || st == CLOAK_EXIT_INTERNAL || st == CLOAK_EXIT_INTERRUPTED;
}

int handoff_take_reply(struct handoff *h, struct handoff_reply *out, const char **why)
{
	struct handoff_page *p = h->page;
	uint32_t got = atomic_load_explicit(&p->rep_seq, memory_order_acquire);
	/* One copy of the reply; only the copy is judged. */
	*out = p->rep;
	if (got != h->seq || out->token != h->token) {
		*why = "replied out of turn";
		return -1;
	}
	bool in_shape = out->verdict == HANDOFF_RESUME ||
			(out->verdict == HANDOFF_END && handoff_status_in_shape(out->status) &&
			 (out->signal == 0 || out->status == CLOAK_EXIT_INTERRUPTED) &&
			 out->signal >= 0 && out->signal < 65);
	if (!in_shape) {
		*why = "replied out of shape";
		return -1;
	}
	return 0;
}

/* SPDX-License-Identifier: ISC */
/*
 * The hand-off between the vCPU runner and the device process
 * (docs/design.md, "Two processes"): one page both map, made before the
 * fork. This module is the protocol alone, what both sides must agree on:
 * the page's layout, the sequence and wake rules, and the runner's check
 * of a reply, and the runner's half. The device process's half is
 * device/serve.c; what the runner does around its half, device_link.c.
 *
 * The page. Each side writes only its own half and publishes it by
 * storing its sequence number last (release); the other side loads the
 * number first (acquire), then copies the half once and uses only the
 * copy. A request is numbered 1, 2, ... and carries a token the device
 * process cannot know before the request is made; a reply names the
 * request it answers by both.
 *
 * Waking. A side about to sleep sets its sleeping flag, looks at the
 * other's number once more, and only then waits on it (the runner in a
 * futex; the device process in a poll of its channels and an eventfd, so
 * that it sees a channel turn ready while idle); a side that publishes
 * wakes the other only when that flag is set (a Dekker
 * pair: under sequential consistency either the sleeper sees the new
 * number or the publisher sees the flag). With more than one CPU each side
 * first spins a short while on the number, so a hand-off is a cache line
 * each way rather than two wake-ups; with one CPU spinning only delays the
 * other side, so neither spins.
 *
 * The runner trusts nothing in a reply but what handoff_take_reply()
 * checked: the number and token of the request just made, a known verdict,
 * and a status a device process may end the VM with. A device process can
 * set no register and write no guest memory through the page.
 */
#ifndef CLOAK_HANDOFF_HANDOFF_H
#define CLOAK_HANDOFF_HANDOFF_H

#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "fail.h"

enum handoff_op {
	HANDOFF_CALL = 1,   /* apply the changes, then answer the call */
	HANDOFF_SYNC = 2,   /* apply the changes only */
	HANDOFF_FINISH = 3, /* the VM ended: dump, close the devices, exit */
};

/* A change to which guest pages are shared, as the runner decoded and
 * accepted it: the device process applies it to its own view
 * (mem/device_view.h) before it handles anything else. */
enum handoff_change_kind { HANDOFF_PROTECT = 1, HANDOFF_SHARE = 2, HANDOFF_UNSHARE = 3 };
struct handoff_change {
	uint32_t kind;
	uint32_t pad_;
	uint64_t gpa, npages;
};
#define HANDOFF_CHANGES_MAX 32

struct handoff_request {
	uint32_t op;                /* enum handoff_op */
	uint32_t port, size, value; /* HANDOFF_CALL: an outl of value to port */
	uint64_t token;
	uint32_t nchanges;
	uint32_t pad_;
	struct handoff_change change[HANDOFF_CHANGES_MAX];
};

enum handoff_verdict { HANDOFF_RESUME = 1, HANDOFF_END = 2 };
struct handoff_reply {
	uint32_t verdict; /* enum handoff_verdict */
	int32_t status;   /* HANDOFF_END: the VM's exit status */
	int32_t signal;   /* HANDOFF_END for a stop request: its signal, else 0 */
	uint32_t pad_;
	uint64_t token;   /* the request's, echoed */
};

/* The page. Each side writes only its own half. */
struct handoff_page {
	/* The runner's half. */
	_Atomic uint32_t req_seq;
	_Atomic uint32_t rep_sleeping; /* the runner waits on rep_seq */
	struct handoff_request req;
	/* The device process's half, on cache lines of its own. */
	_Alignas(64) _Atomic uint32_t rep_seq;
	_Atomic uint32_t req_sleeping; /* the device process sleeps: write wake_fd */
	struct handoff_reply rep;
	/* The readiness page: what a POLL with a zero timeout would answer
	 * now (poll bits, cloak/abi.h), kept by the device process after
	 * every request and whenever a channel it sleeps on turns ready, so
	 * the runner answers such a POLL without a hand-off. known: the
	 * devices that exist and are open; ready: those ready now. */
	_Alignas(64) _Atomic uint64_t known;
	_Atomic uint64_t ready;
};
_Static_assert(sizeof(struct handoff_page) <= 4096, "one page");


struct handoff {
	struct handoff_page *page;
	uint32_t seq;         /* last request sent (runner) or taken (device) */
	uint64_t token_state; /* runner: xorshift64, seeded from getrandom */
	uint64_t token;       /* runner: the last request's, kept on its side */
	bool spin;            /* more than one CPU: spin before sleeping */
	int wake_fd;          /* an eventfd: a request for a device process asleep */
};


/* ---- the runner ---- */
/* Whether the device process published a reply to a request never made
 * (any reply since the last one taken). */
bool handoff_unsolicited(const struct handoff *h);
/* Numbers the request, gives it a fresh token and publishes it. */
void handoff_send(struct handoff *h, const struct handoff_request *r);
/* Waits up to `slice` for the reply (spinning first where that pays):
 * true once it is there; false after the slice or a signal. */
bool handoff_await(struct handoff *h, const struct timespec *slice);
/* The runner's check: copies the reply once and accepts it only if it
 * answers the request just made and is in shape. 0 with *out, or -1 with
 * why ("replied out of turn", "replied out of shape"). */
int handoff_take_reply(struct handoff *h, struct handoff_reply *out, const char **why);
/* A status a device process may end the VM with: the guest's own, or one
 * a call of its gives (the guest broke the ABI, aborted, a call failed, a
 * stop request reached it). */
bool handoff_status_in_shape(int32_t status);

/* The wake rules, for both sides. handoff_spin: with more than one CPU,
 * spins a short while until *word is no longer old (true) or gives up
 * (false); with one, false at once. handoff_sleep: the sleeping side's
 * flag, a last look, and a futex wait until *word changes, ts passes (NULL:
 * no limit) or a signal comes. handoff_publish: stores seq in *word and
 * wakes the other side if it sleeps. */
bool handoff_spin(const struct handoff *h, _Atomic uint32_t *word, uint32_t old);
void handoff_sleep(_Atomic uint32_t *word, _Atomic uint32_t *sleeping, uint32_t old,
		   const struct timespec *ts);
void handoff_publish(_Atomic uint32_t *word, _Atomic uint32_t *sleeping, uint32_t seq);
long handoff_futex(_Atomic uint32_t *word, int op, uint32_t val, const struct timespec *ts);

#endif

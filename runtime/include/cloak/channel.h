/* SPDX-License-Identifier: ISC */
/*
 * Channels (monitor option --channel NAME=listen:PATH|connect:PATH): a
 * reliable byte stream to a host Unix socket.
 *
 * Deadlines are absolute cloak_time_ns() values; CLOAK_CHAN_NOWAIT (0)
 * means "do not wait", CLOAK_CHAN_FOREVER never expires. While waiting the
 * guest sleeps in the monitor (POLL), it does not spin. With protection on,
 * data is copied through the bounce pool; a buffer inside the bounce pool
 * is used in place (no copy).
 *
 * Errors (negative): -CLOAK_ENOENT no such channel or not open,
 * -CLOAK_EPIPE the peer disconnected (or, for connect:, could not be
 * reached; cloak_chan_open() again to wait for / retry a new peer),
 * -CLOAK_ETIMEDOUT the deadline passed first (also when a listening
 * channel's peer never connected), -CLOAK_EAGAIN with CLOAK_CHAN_NOWAIT.
 */
#ifndef CLOAK_CHANNEL_H
#define CLOAK_CHANNEL_H

#include <stddef.h>
#include <stdint.h>

#include "cloak/abi.h"

#define CLOAK_CHAN_NOWAIT 0ull
#define CLOAK_CHAN_FOREVER UINT64_MAX

/* Returns a handle (>= 0) or -CLOAK_E*. */
int cloak_chan_open(const char *name);
/* Reads at least 1 and at most len bytes: the count, or -CLOAK_E*. */
long cloak_chan_read(int h, void *buf, size_t len, uint64_t deadline);
/* Reads exactly len bytes: 0 or -CLOAK_E* (bytes read before an error are
 * lost to the caller; use it for fixed-size messages). */
int cloak_chan_read_full(int h, void *buf, size_t len, uint64_t deadline);
/* Writes all len bytes, waiting while the host side is full: 0 or
 * -CLOAK_E*. */
int cloak_chan_write(int h, const void *buf, size_t len, uint64_t deadline);
/* A request-reply service's turn: writes all of out (waiting while the
 * host side is full, until out_deadline), then reads at least 1 and at
 * most in_len bytes into in (waiting until in_deadline): the count read,
 * or -CLOAK_E*. *sent: the bytes of out that went (out_len unless the
 * write failed, which tells a reader that failed from a writer). One call
 * to the monitor (CHAN_XFER) where a write, a poll and a read make three;
 * a monitor without it gets those three. Whatever this staged in the
 * bounce pool is zeroed before it returns. */
long cloak_chan_write_read(int h, const void *out, size_t out_len, uint64_t out_deadline, void *in,
			   size_t in_len, uint64_t in_deadline, size_t *sent);
/* Closes the channel's current connection: the peer reads end-of-file
 * and further I/O answers -CLOAK_EPIPE until cloak_chan_open() (for a
 * listen: channel, the next connection). 0 or -CLOAK_E*. */
int cloak_chan_hangup(int h);
/* The handle's bit for cloak_poll(). */
static inline uint64_t cloak_chan_poll_bit(int h)
{
	return CLOAK_CHAN_POLL_BIT((uint64_t)h);
}

#endif

/* SPDX-License-Identifier: ISC */
/* Channels, guest side: see cloak/channel.h. */
#include "cloak/channel.h"

#include <string.h>

#include "io.h"

static struct cloak_hc_chan_open open_block RT_SHARED;
static struct cloak_hc_chan_io io_block RT_SHARED;
static struct cloak_hc_chan_xfer xfer_block RT_SHARED;
static int xfer_missing; /* the monitor answered CHAN_XFER with ENOSYS */

int cloak_chan_open(const char *name)
{
	if (io_set_name(open_block.name, name))
		return -CLOAK_ENOENT;
	int64_t r = cloak_hypercall(CLOAK_HC_CHAN_OPEN, &open_block);
	return r ? (int)r : (int)open_block.handle;
}

static int64_t io_call(int h, uint64_t op, const void *buf, size_t len)
{
	io_block.handle = (uint64_t)h;
	io_block.op = op;
	io_block.buf = (uint64_t)(uintptr_t)buf;
	io_block.len = len;
	return cloak_hypercall(CLOAK_HC_CHAN_IO, &io_block);
}

/* A deadline as POLL's relative timeout: 0, or -CLOAK_EAGAIN (no waiting
 * asked) / -CLOAK_ETIMEDOUT (it passed). */
static int timeout_until(uint64_t deadline, uint64_t *timeout)
{
	if (deadline == CLOAK_CHAN_NOWAIT)
		return -CLOAK_EAGAIN;
	*timeout = UINT64_MAX;
	if (deadline != CLOAK_CHAN_FOREVER) {
		uint64_t now = cloak_time_ns();
		if (now >= deadline)
			return -CLOAK_ETIMEDOUT;
		*timeout = deadline - now;
	}
	return 0;
}

/* Sleeps in the monitor until the channel may be ready or the deadline
 * passes: 0, or -CLOAK_ETIMEDOUT / -CLOAK_EAGAIN (no waiting asked). */
static int wait_ready(int h, uint64_t deadline)
{
	uint64_t timeout;
	int t = timeout_until(deadline, &timeout);
	if (t)
		return t;
	int r = cloak_poll(timeout, cloak_chan_poll_bit(h), NULL);
	return r < 0 ? r : 0;
}

long cloak_chan_read(int h, void *buf, size_t len, uint64_t deadline)
{
	int bounce = !io_reachable(buf, len);
	if (len > CLOAK_CHAN_IO_MAX)
		len = CLOAK_CHAN_IO_MAX;
	if (bounce && len > rt_bounce_size)
		len = rt_bounce_size;
	for (;;) {
		int64_t n = io_call(h, CLOAK_CHAN_READ, bounce ? rt_bounce : buf, len);
		if (n > 0 || len == 0) {
			if (bounce)
				io_copy(buf, rt_bounce, (size_t)n);
			return (long)n;
		}
		if (n != -CLOAK_EAGAIN)
			return (long)n;
		int w = wait_ready(h, deadline);
		if (w)
			return w;
	}
}

int cloak_chan_read_full(int h, void *buf, size_t len, uint64_t deadline)
{
	unsigned char *p = buf;
	while (len) {
		long n = cloak_chan_read(h, p, len, deadline);
		if (n < 0)
			return (int)n;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int cloak_chan_write(int h, const void *buf, size_t len, uint64_t deadline)
{
	const unsigned char *p = buf;
	int bounce = !io_reachable(buf, len);
	size_t chunk = bounce ? rt_bounce_size : CLOAK_CHAN_IO_MAX;
	while (len) {
		size_t n = len < chunk ? len : chunk;
		if (bounce)
			io_copy(rt_bounce, p, n);
		/* Push this chunk out, waiting while the host side is full;
		 * what is left of it is still in the bounce pool. */
		size_t sent = 0;
		while (sent < n) {
			const unsigned char *src = (bounce ? rt_bounce : p) + sent;
			int64_t k = io_call(h, CLOAK_CHAN_WRITE, src, n - sent);
			if (k > 0) {
				sent += (size_t)k;
				continue;
			}
			if (k != -CLOAK_EAGAIN)
				return k ? (int)k : -CLOAK_EIO;
			int w = wait_ready(h, deadline);
			if (w)
				return w;
		}
		p += n;
		len -= n;
	}
	return 0;
}

/* The calls CHAN_XFER saves, for a monitor without it. */
static long write_then_read(int h, const void *out, size_t out_len, uint64_t out_deadline,
			    void *in, size_t in_len, uint64_t in_deadline, size_t *sent)
{
	int w = cloak_chan_write(h, out, out_len, out_deadline);
	if (w)
		return w;
	*sent = out_len;
	return cloak_chan_read(h, in, in_len, in_deadline);
}

/* The bounce pool's bytes the fallback staged: its writes' chunks and
 * its read start at the pool's start. */
static size_t fallback_staged(int out_bounce, size_t out_len, int in_bounce, long got)
{
	size_t w = out_bounce ? out_len : 0, r = in_bounce && got > 0 ? (size_t)got : 0;
	return w > r ? w : r;
}

long cloak_chan_write_read(int h, const void *out, size_t out_len, uint64_t out_deadline, void *in,
			   size_t in_len, uint64_t in_deadline, size_t *sent)
{
	*sent = 0;
	/* Bounced, out goes at the pool's start and in right after it. */
	int out_bounce = out_len && !io_reachable(out, out_len), in_bounce = !io_reachable(in, in_len);
	size_t at = out_bounce ? (out_len + 7) & ~(size_t)7 : 0, room = in_len, staged = 0;
	if (room > CLOAK_CHAN_IO_MAX)
		room = CLOAK_CHAN_IO_MAX;
	if (in_bounce && at < rt_bounce_size && room > rt_bounce_size - at)
		room = rt_bounce_size - at;
	long r;
	if (xfer_missing || in_len == 0 || out_len > CLOAK_CHAN_IO_MAX || (out_bounce && at >= rt_bounce_size))
		goto fallback;
	if (out_bounce)
		io_copy(rt_bounce, out, out_len);
	staged = at;
	unsigned char *dst = in_bounce ? rt_bounce + at : in;
	const unsigned char *src = out_bounce ? rt_bounce : out;
	size_t left = out_len;
	for (;;) {
		uint64_t timeout = 0;
		int t = timeout_until(in_deadline, &timeout);
		if (t && left == 0) { /* nothing to write, and no time left to read */
			r = t;
			goto done;
		}
		if (t)
			timeout = 0; /* the write alone, and a read of what is there */
		xfer_block = (struct cloak_hc_chan_xfer){
			.handle = (uint64_t)h, .timeout_ns = timeout,
			.out = (uint64_t)(uintptr_t)(src + (out_len - left)), .out_len = left,
			.in = (uint64_t)(uintptr_t)dst, .in_len = room,
		};
		r = cloak_hypercall(CLOAK_HC_CHAN_XFER, &xfer_block);
		if (r == -CLOAK_ENOSYS) {
			xfer_missing = 1;
			goto fallback;
		}
		left -= xfer_block.written < left ? xfer_block.written : left;
		*sent = out_len - left;
		if (r > 0) {
			if (in_bounce) {
				io_copy(in, dst, (size_t)r);
				staged = at + (size_t)r;
			}
			goto done;
		}
		if (r != -CLOAK_EAGAIN)
			goto done;
		if (left) { /* the host side is full: cloak_chan_write waits for room */
			int w = cloak_chan_write(h, src + (out_len - left), left, out_deadline);
			if (w) {
				r = w;
				goto done;
			}
			left = 0;
			*sent = out_len;
		}
	}
fallback:
	r = write_then_read(h, out, out_len, out_deadline, in, in_len, in_deadline, sent);
	size_t f = fallback_staged(out_bounce, out_len, in_bounce, r);
	staged = f > staged ? f : staged;
done:
	if (staged)
		memset(rt_bounce, 0, staged < rt_bounce_size ? staged : rt_bounce_size);
	return r;
}

int cloak_chan_hangup(int h)
{
	int64_t r = io_call(h, CLOAK_CHAN_HANGUP, NULL, 0);
	return r < 0 ? (int)r : 0;
}

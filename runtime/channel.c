/* SPDX-License-Identifier: ISC */
/* Channels, guest side: see cloak/channel.h. */
#include "cloak/channel.h"

#include <string.h>

#include "io.h"

static struct cloak_hc_chan_open open_block RT_SHARED;
static struct cloak_hc_chan_io io_block RT_SHARED;

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

/* Sleeps in the monitor until the channel may be ready or the deadline
 * passes: 0, or -CLOAK_ETIMEDOUT / -CLOAK_EAGAIN (no waiting asked). */
static int wait_ready(int h, uint64_t deadline)
{
	if (deadline == CLOAK_CHAN_NOWAIT)
		return -CLOAK_EAGAIN;
	uint64_t timeout = UINT64_MAX;
	if (deadline != CLOAK_CHAN_FOREVER) {
		uint64_t now = cloak_time_ns();
		if (now >= deadline)
			return -CLOAK_ETIMEDOUT;
		timeout = deadline - now;
	}
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

int cloak_chan_hangup(int h)
{
	int64_t r = io_call(h, CLOAK_CHAN_HANGUP, NULL, 0);
	return r < 0 ? (int)r : 0;
}

/* SPDX-License-Identifier: ISC */
/*
 * The block cache: write-behind and read-ahead for the block API
 * (cloak/block.h), in one area of shared pages set aside at boot
 * (protect.c). Each call to the monitor is an exit, and with the monitor's
 * devices in a process of their own a hand-off to it too, so the cache
 * turns many small requests into one: sequential writes are copied into
 * the area and sent as one request when it fills, when the device is
 * read or flushed, and at the guest's exit; a read that continues the last
 * one fetches the area's worth at once and serves the reads after it from
 * there.
 *
 * The area holds one device's queued writes or one device's read-ahead at
 * a time. What a write promises: it is on the host once cloak_block_flush()
 * returns (the queued writes and the flush go to the monitor in one batch)
 * or the guest exits in order; a host error of a queued write is answered
 * by that device's next write or flush. Reads see every write before them.
 */
#include <string.h>

#include "cloak/block.h"
#include "io.h"

enum { CACHE_NONE, CACHE_WRITE, CACHE_READ };

static struct {
	int mode;
	uint64_t handle;   /* whose data the area holds */
	uint64_t start;    /* CACHE_READ: the device offset of the area's first byte */
	size_t len;        /* CACHE_READ: bytes held; CACHE_WRITE: bytes queued */
	unsigned nreq;     /* CACHE_WRITE: requests queued */
	int error[CLOAK_BLOCK_MAX];          /* a queued write's host error, not yet told */
	uint64_t read_end[CLOAK_BLOCK_MAX];  /* where each device's last read ended, plus 1 */
} cache;

/* The queued writes, and a FLUSH after them, as one BLOCK_BATCH. */
static struct cloak_block_req cache_reqs[CLOAK_BLOCK_BATCH_MAX] RT_SHARED;
static struct cloak_hc_block_batch cache_batch RT_SHARED;
static struct cloak_hc_block_io cache_read RT_SHARED;

/* Sends what is queued (and a FLUSH after it with `flush`): 0, or the
 * first error of the batch. The area is empty after. */
static int send_queued(int flush)
{
	unsigned n = cache.mode == CACHE_WRITE ? cache.nreq : 0;
	if (flush)
		cache_reqs[n++] = (struct cloak_block_req){ .op = CLOAK_BLOCK_FLUSH };
	cache.mode = CACHE_NONE;
	cache.len = 0;
	cache.nreq = 0;
	if (!n)
		return 0;
	cache_batch.handle = cache.handle;
	cache_batch.reqs = (uint64_t)(uintptr_t)cache_reqs;
	cache_batch.count = n;
	int64_t e = cloak_hypercall(CLOAK_HC_BLOCK_BATCH, &cache_batch);
	for (unsigned i = 0; e > 0 && i < n; i++)
		if (cache_reqs[i].ret)
			return (int)cache_reqs[i].ret;
	return (int)e;
}

/* Sends the queued writes, keeping an error for their device's next
 * write or flush. */
static void send_keeping_error(void)
{
	uint64_t h = cache.handle;
	int e = send_queued(0);
	if (e && h < CLOAK_BLOCK_MAX && !cache.error[h])
		cache.error[h] = e;
}

/* Empties the area for another use: queued writes go out, read-ahead is
 * dropped. */
static void vacate(void)
{
	send_keeping_error();
	cache.mode = CACHE_NONE;
}

/* The guest's exit (exit.c): nothing queued is left behind. */
static void drain_at_exit(void)
{
	vacate();
}

/* The error a device's queued writes met, once. */
static int take_error(const struct cloak_block *b)
{
	int e = cache.error[b->handle];
	cache.error[b->handle] = 0;
	return e;
}

int cloak_rt_block_write_cached(const struct cloak_block *b, uint64_t offset, const void *buf,
				size_t len)
{
	int e = cloak_rt_block_check(b, offset, len, 1);
	if (e || (e = take_error(b)))
		return e;
	if (cache.mode == CACHE_READ && cache.handle == b->handle &&
	    offset < cache.start + cache.len && cache.start < offset + len)
		cache.mode = CACHE_NONE; /* the write changes what was read ahead */
	if (len > cloak_rt_block_cache_size) {
		if (cache.mode == CACHE_WRITE && cache.handle == b->handle && (e = send_queued(0)))
			return e;
		return cloak_rt_block_write_chunked(b, offset, buf, len);
	}
	if (cache.mode != CACHE_WRITE || cache.handle != b->handle ||
	    cache.len + len > cloak_rt_block_cache_size) {
		if (cache.mode == CACHE_WRITE && cache.handle == b->handle) {
			if ((e = send_queued(0)))
				return e;
		} else {
			vacate();
		}
		cache.mode = CACHE_WRITE;
		cache.handle = b->handle;
		rt_exit_drain = drain_at_exit;
	}
	unsigned char *at = cloak_rt_block_cache + cache.len;
	io_copy(at, buf, len);
	struct cloak_block_req *last = cache.nreq ? &cache_reqs[cache.nreq - 1] : NULL;
	if (last && last->offset + last->len == offset && last->buf + last->len == (uintptr_t)at) {
		last->len += len; /* continues the last request: one pwrite for both */
	} else {
		if (cache.nreq == CLOAK_BLOCK_BATCH_MAX - 1) { /* one slot kept for a FLUSH */
			if ((e = send_queued(0)))
				return e;
			cache.mode = CACHE_WRITE;
			at = cloak_rt_block_cache;
			io_copy(at, buf, len);
		}
		cache_reqs[cache.nreq++] = (struct cloak_block_req){
			.op = CLOAK_BLOCK_WRITE, .offset = offset, .buf = (uintptr_t)at, .len = len };
	}
	cache.len += len;
	return 0;
}

int cloak_rt_block_read_cached(const struct cloak_block *b, uint64_t offset, void *buf, size_t len)
{
	int e = cloak_rt_block_check(b, offset, len, 0);
	if (e)
		return e;
	uint64_t h = b->handle;
	if (cache.mode == CACHE_WRITE && cache.handle == h)
		send_keeping_error(); /* reads see every write before them */
	int held = cache.mode == CACHE_READ && cache.handle == h && offset >= cache.start &&
		   offset + len <= cache.start + cache.len;
	/* Read ahead only where this read continues the last one. */
	if (!held && cache.read_end[h] == offset + 1 && len <= cloak_rt_block_cache_size / 2) {
		uint64_t n = b->capacity - offset;
		if (n > cloak_rt_block_cache_size)
			n = cloak_rt_block_cache_size;
		vacate();
		cache_read = (struct cloak_hc_block_io){ .handle = h, .op = CLOAK_BLOCK_READ,
			.offset = offset, .buf = (uintptr_t)cloak_rt_block_cache, .len = n };
		if (cloak_hypercall(CLOAK_HC_BLOCK_IO, &cache_read) == 0) {
			cache.mode = CACHE_READ;
			cache.handle = h;
			cache.start = offset;
			cache.len = n;
			held = 1;
		}
	}
	cache.read_end[h] = offset + len + 1;
	if (!held)
		return cloak_rt_block_read_chunked(b, offset, buf, len);
	io_copy(buf, cloak_rt_block_cache + (offset - cache.start), len);
	return 0;
}

int cloak_block_flush(const struct cloak_block *b)
{
	if (!cloak_rt_block_cache)
		return cloak_rt_block_flush_now(b);
	/* A flush is also where a read sees the host again. */
	if (cache.mode == CACHE_READ && cache.handle == b->handle)
		cache.mode = CACHE_NONE;
	int e;
	if (cache.mode == CACHE_WRITE && cache.handle == b->handle)
		e = send_queued(1);
	else
		e = cloak_rt_block_flush_now(b);
	int queued = take_error(b);
	return queued ? queued : e;
}

int cloak_block_submit(const struct cloak_block *b, struct cloak_block_req *reqs, size_t n)
{
	/* An explicit batch runs after what was queued, and may change what
	 * was read ahead. */
	if (cloak_rt_block_cache && cache.handle == b->handle && cache.mode == CACHE_READ)
		cache.mode = CACHE_NONE;
	if (cloak_rt_block_cache && cache.handle == b->handle && cache.mode == CACHE_WRITE)
		send_keeping_error();
	return cloak_rt_block_submit_now(b, reqs, n);
}

/* SPDX-License-Identifier: ISC */
/*
 * Block devices (monitor option --block NAME=PATH[,ro][,sector=N]).
 *
 * Reads and writes move whole sectors, many per call (up to
 * CLOAK_BLOCK_IO_MAX, and the bounce pool's size when protection is on).
 * With protection on, data is copied through the shared bounce pool, so any
 * buffer works and none is ever shared; a buffer that already lies in the
 * bounce pool (cloak_bounce_area()) is used in place, which saves the copy
 * for data that need not be private. Without protection buffers go to the
 * monitor directly.
 *
 * All calls return 0 or a negative CLOAK_E* code: -CLOAK_ENOENT (no such
 * device), -CLOAK_EINVAL (offset or length not a sector multiple, zero
 * length), -CLOAK_ERANGE (past the end), -CLOAK_EROFS, -CLOAK_EIO.
 *
 * The block cache (cloak_config_block_cache_pages shared pages, 64 by
 * default; 0 turns it off), where KVM runs guest code on the CPU
 * (CLOAK_CAP_NATIVE_CPU: there one call to the monitor costs as much as
 * copying many pages; where KVM emulates guest code, the reverse): a write up to the cache's size may return once
 * its data is copied into the cache, before it reaches the host, and
 * writes that follow one another go to the monitor as one request. Every
 * write is on the host's stable storage once cloak_block_flush() returns
 * (the queued writes and the flush are one call), and on the host (not
 * necessarily stable) once the guest exits in order (cloak_exit(), or
 * return from main); one still queued when the VM is stopped otherwise
 * (a signal, the watchdog, an abort) is lost, as data in a page cache is.
 * A host error of a queued write is returned, once, by the device's next
 * write (which is then not made) or flush. A read sees every write before it; a read that continues the
 * previous one on the same device reads ahead as much as the cache holds,
 * and the reads after it are served from there until a write to that range
 * or a flush of the device.
 */
#ifndef CLOAK_BLOCK_H
#define CLOAK_BLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "cloak/abi.h"
#include "cloak/guest.h"

/* Filled by cloak_block_open(); the calls below take only such a one (or
 * a copy of it). */
struct cloak_block {
	uint64_t handle;
	uint64_t capacity;    /* bytes */
	uint64_t sector_size; /* 512 or 4096 */
	uint64_t flags;       /* CLOAK_BLOCK_RO */
	/* The runtime's: this device's argument blocks for READ and WRITE,
	 * handle and op already in place. */
	struct cloak_hc_block_io *rt_call[2];
};

int cloak_block_open(const char *name, struct cloak_block *out);
static inline int cloak_block_read(const struct cloak_block *b, uint64_t offset, void *buf,
				   size_t len);
static inline int cloak_block_write(const struct cloak_block *b, uint64_t offset,
				    const void *buf, size_t len);
/* Returns once every write before it is on the host's stable storage. */
int cloak_block_flush(const struct cloak_block *b);
/*
 * Batched I/O: n requests (struct cloak_block_req, cloak/abi.h: op READ,
 * WRITE or FLUSH, offset, buf, len, each as for the calls above) run in
 * array order, CLOAK_BLOCK_BATCH_MAX to a monitor call, so 64 sectors cost
 * one exit instead of 64. Each request's `ret` gets its status (0 or
 * -CLOAK_E*). Buffers are passed as they are: with protection on they must
 * lie in the bounce pool (cloak_bounce_area()); one that does not fails with
 * -CLOAK_EACCES alone. The array itself may be anywhere: one in the bounce
 * pool is used in place; any other is copied through the runtime's own
 * shared array (40 bytes a request each way, which costs where KVM emulates
 * guest code). Returns
 * the number of requests that failed (0: all done), or a negative
 * -CLOAK_E* when a whole call was refused (then the requests of that call
 * and after it did not run; those before it did). Completion is
 * synchronous: every status is set when it returns.
 */
int cloak_block_submit(const struct cloak_block *b, struct cloak_block_req *reqs, size_t n);
/* Poll bit of a block device (always ready: block I/O is synchronous). */
static inline uint64_t cloak_block_poll_bit(const struct cloak_block *b)
{
	return 1ull << b->handle;
}

/*
 * The rest is the runtime's, here for the inline path of read and write.
 * A request the monitor can serve in one call straight from the caller's
 * buffer (in the bounce pool, or anywhere without protection) needs no
 * checks in the guest: the monitor validates it whole and moves all or
 * nothing. Where KVM emulates guest code every guest instruction costs
 * about half a microsecond, as much as a tenth of the exit itself, so this
 * path is a handful of them, inline in the caller: a window test and the
 * argument block. Everything else (private buffers copied through the
 * pool, requests longer than one call) goes to the out-of-line functions.
 */
struct cloak_rt_io_window {
	uintptr_t base;   /* the buffers the monitor can reach as they are: */
	uintptr_t end;    /* [base, end): all memory, or the bounce pool */
	size_t block_max; /* longest one-call request */
};
extern struct cloak_rt_io_window cloak_rt_io;
/* The block cache, when there is one (NULL: none): block_cache.c. */
extern unsigned char *cloak_rt_block_cache;
extern size_t cloak_rt_block_cache_size;
int cloak_rt_block_read_cached(const struct cloak_block *b, uint64_t offset, void *buf,
			       size_t len);
int cloak_rt_block_write_cached(const struct cloak_block *b, uint64_t offset, const void *buf,
				size_t len);
/* Without the cache (block.c): */
int cloak_rt_block_flush_now(const struct cloak_block *b);
int cloak_rt_block_submit_now(const struct cloak_block *b, struct cloak_block_req *reqs,
			      size_t n);
/* 0, or why the request is refused before anything moves (write: also a
 * read-only device). */
int cloak_rt_block_check(const struct cloak_block *b, uint64_t offset, size_t len, int write);
int cloak_rt_block_read_chunked(const struct cloak_block *b, uint64_t offset, void *buf,
				size_t len);
int cloak_rt_block_write_chunked(const struct cloak_block *b, uint64_t offset,
				 const void *buf, size_t len);

/* Three compares. A buffer whose end wraps around the address space may
 * pass; the monitor refuses it (-CLOAK_EFAULT) as it refuses any request
 * outside guest memory. */
static inline int cloak_rt_block_one_call(const void *buf, size_t len)
{
	uintptr_t a = (uintptr_t)buf;
	return a >= cloak_rt_io.base && len <= cloak_rt_io.block_max && a + len <= cloak_rt_io.end;
}

/* op: CLOAK_BLOCK_READ or CLOAK_BLOCK_WRITE, the index into rt_call. */
_Static_assert(CLOAK_BLOCK_READ == 0 && CLOAK_BLOCK_WRITE == 1, "rt_call index");
static inline int cloak_rt_block_call(const struct cloak_block *b, uint64_t op,
				      uint64_t offset, const void *buf, size_t len)
{
	struct cloak_hc_block_io *a = b->rt_call[op];
	a->offset = offset;
	a->buf = (uint64_t)(uintptr_t)buf;
	a->len = len;
	return (int)cloak_hypercall(CLOAK_HC_BLOCK_IO, a);
}

static inline int cloak_block_read(const struct cloak_block *b, uint64_t offset, void *buf,
				   size_t len)
{
	if (cloak_rt_block_cache)
		return cloak_rt_block_read_cached(b, offset, buf, len);
	if (__builtin_expect(cloak_rt_block_one_call(buf, len), 1))
		return cloak_rt_block_call(b, CLOAK_BLOCK_READ, offset, buf, len);
	return cloak_rt_block_read_chunked(b, offset, buf, len);
}

static inline int cloak_block_write(const struct cloak_block *b, uint64_t offset,
				    const void *buf, size_t len)
{
	if (cloak_rt_block_cache)
		return cloak_rt_block_write_cached(b, offset, buf, len);
	if (__builtin_expect(cloak_rt_block_one_call(buf, len), 1))
		return cloak_rt_block_call(b, CLOAK_BLOCK_WRITE, offset, buf, len);
	return cloak_rt_block_write_chunked(b, offset, buf, len);
}

#endif

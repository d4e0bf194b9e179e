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
 */
#ifndef CLOAK_BLOCK_H
#define CLOAK_BLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "cloak/abi.h"
#include "cloak/guest.h"

struct cloak_block {
	uint64_t handle;
	uint64_t capacity;    /* bytes */
	uint64_t sector_size; /* 512 or 4096 */
	uint64_t flags;       /* CLOAK_BLOCK_RO */
};

int cloak_block_open(const char *name, struct cloak_block *out);
static inline int cloak_block_read(const struct cloak_block *b, uint64_t offset, void *buf,
				   size_t len);
static inline int cloak_block_write(const struct cloak_block *b, uint64_t offset,
				    const void *buf, size_t len);
/* Returns once every write before it is on the host's stable storage. */
int cloak_block_flush(const struct cloak_block *b);
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
	size_t span;      /* [base, base + span): all memory, or the pool */
	size_t block_max; /* longest one-call request from there, <= span */
};
extern struct cloak_rt_io_window cloak_rt_io;
extern struct cloak_hc_block_io cloak_rt_block_io; /* in a shared page */
int cloak_rt_block_read_chunked(const struct cloak_block *b, uint64_t offset, void *buf,
				size_t len);
int cloak_rt_block_write_chunked(const struct cloak_block *b, uint64_t offset,
				 const void *buf, size_t len);

static inline int cloak_rt_block_one_call(const void *buf, size_t len)
{
	uintptr_t t = (uintptr_t)buf - cloak_rt_io.base;
	return len <= cloak_rt_io.block_max && t <= cloak_rt_io.span - len;
}

static inline int cloak_rt_block_call(const struct cloak_block *b, uint64_t op,
				      uint64_t offset, const void *buf, size_t len)
{
	cloak_rt_block_io.handle = b->handle;
	cloak_rt_block_io.op = op;
	cloak_rt_block_io.offset = offset;
	cloak_rt_block_io.buf = (uint64_t)(uintptr_t)buf;
	cloak_rt_block_io.len = len;
	return (int)cloak_hypercall(CLOAK_HC_BLOCK_IO, &cloak_rt_block_io);
}

static inline int cloak_block_read(const struct cloak_block *b, uint64_t offset, void *buf,
				   size_t len)
{
	if (__builtin_expect(cloak_rt_block_one_call(buf, len), 1))
		return cloak_rt_block_call(b, CLOAK_BLOCK_READ, offset, buf, len);
	return cloak_rt_block_read_chunked(b, offset, buf, len);
}

static inline int cloak_block_write(const struct cloak_block *b, uint64_t offset,
				    const void *buf, size_t len)
{
	if (__builtin_expect(cloak_rt_block_one_call(buf, len), 1))
		return cloak_rt_block_call(b, CLOAK_BLOCK_WRITE, offset, buf, len);
	return cloak_rt_block_write_chunked(b, offset, buf, len);
}

#endif

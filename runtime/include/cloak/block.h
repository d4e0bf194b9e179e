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

struct cloak_block {
	uint64_t handle;
	uint64_t capacity;    /* bytes */
	uint64_t sector_size; /* 512 or 4096 */
	uint64_t flags;       /* CLOAK_BLOCK_RO */
};

int cloak_block_open(const char *name, struct cloak_block *out);
int cloak_block_read(const struct cloak_block *b, uint64_t offset, void *buf, size_t len);
int cloak_block_write(const struct cloak_block *b, uint64_t offset, const void *buf,
		      size_t len);
/* Returns once every write before it is on the host's stable storage. */
int cloak_block_flush(const struct cloak_block *b);
/* Poll bit of a block device (always ready: block I/O is synchronous). */
static inline uint64_t cloak_block_poll_bit(const struct cloak_block *b)
{
	return 1ull << b->handle;
}

#endif

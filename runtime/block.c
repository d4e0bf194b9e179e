/* SPDX-License-Identifier: ISC */
/* Block devices, guest side: see cloak/block.h. */
#include "cloak/block.h"

#include <string.h>

#include "io.h"

static struct cloak_hc_block_info info_block RT_SHARED;
/* One argument block per device and direction (cloak/block.h), and one
 * for FLUSH. */
static struct cloak_hc_block_io rw_block[CLOAK_BLOCK_MAX][2] RT_SHARED;
static struct cloak_hc_block_io flush_block RT_SHARED;
/* BLOCK_BATCH's argument block, and the request array used for a caller's
 * array the monitor cannot reach. */
static struct cloak_hc_block_batch batch_block RT_SHARED;
static struct cloak_block_req batch_reqs[CLOAK_BLOCK_BATCH_MAX] RT_SHARED;

int cloak_block_open(const char *name, struct cloak_block *out)
{
	if (io_set_name(info_block.name, name))
		return -CLOAK_ENOENT;
	int64_t r = cloak_hypercall(CLOAK_HC_BLOCK_INFO, &info_block);
	if (r)
		return (int)r;
	if (info_block.handle >= CLOAK_BLOCK_MAX)
		return -CLOAK_EIO; /* not a handle this ABI has */
	for (unsigned op = 0; op < 2; op++) {
		rw_block[info_block.handle][op].handle = info_block.handle;
		rw_block[info_block.handle][op].op = op;
		out->rt_call[op] = &rw_block[info_block.handle][op];
	}
	out->handle = info_block.handle;
	out->capacity = info_block.capacity;
	out->sector_size = info_block.sector_size;
	out->flags = info_block.flags;
	return 0;
}

static int64_t io_call(const struct cloak_block *b, uint64_t op, uint64_t offset,
		       const void *buf, size_t len)
{
	return cloak_rt_block_call(b, op, offset, buf, len);
}

/* Largest request: one call's limit and, through the bounce pool, the
 * pool's size, in whole sectors. Never 0 for a sane device. */
static size_t chunk_size(const struct cloak_block *b, int via_bounce)
{
	size_t c = CLOAK_BLOCK_IO_MAX;
	if (via_bounce && c > rt_bounce_size)
		c = rt_bounce_size;
	return c & ~(size_t)(b->sector_size - 1); /* sector sizes are powers of two */
}

/* Validation the monitor repeats anyway; done here so a bad request fails
 * before any bytes move rather than after some chunks went through (and
 * before a write is queued: block_cache.c). */
int cloak_rt_block_check(const struct cloak_block *b, uint64_t offset, size_t len, int write)
{
	uint64_t end;
	/* Masks, not `%`: where KVM emulates guest code a division costs many
	 * emulated cycles; where the CPU runs it, a mask costs no more. */
	uint64_t mask = b->sector_size - 1;
	if (!b->sector_size || (b->sector_size & mask) || len == 0 || ((len | offset) & mask))
		return -CLOAK_EINVAL;
	if (__builtin_add_overflow(offset, len, &end) || end > b->capacity)
		return -CLOAK_ERANGE;
	if (write && (b->flags & CLOAK_BLOCK_RO))
		return -CLOAK_EROFS;
	return 0;
}

/* The general path (cloak/block.h has the one-call path inline). */
int cloak_rt_block_read_chunked(const struct cloak_block *b, uint64_t offset, void *buf,
				size_t len)
{
	int r = cloak_rt_block_check(b, offset, len, 0);
	if (r)
		return r;
	int bounce = !io_reachable(buf, len);
	size_t chunk = chunk_size(b, bounce);
	unsigned char *p = buf;
	for (size_t done = 0; done < len;) {
		size_t n = len - done < chunk ? len - done : chunk;
		int64_t e = io_call(b, CLOAK_BLOCK_READ, offset + done, bounce ? rt_bounce : p + done, n);
		if (e)
			return (int)e;
		if (bounce)
			io_copy(p + done, rt_bounce, n);
		done += n;
	}
	return 0;
}

int cloak_rt_block_write_chunked(const struct cloak_block *b, uint64_t offset,
				 const void *buf, size_t len)
{
	int r = cloak_rt_block_check(b, offset, len, 1);
	if (r)
		return r;
	int bounce = !io_reachable(buf, len);
	size_t chunk = chunk_size(b, bounce);
	const unsigned char *p = buf;
	for (size_t done = 0; done < len;) {
		size_t n = len - done < chunk ? len - done : chunk;
		if (bounce)
			io_copy(rt_bounce, p + done, n);
		int64_t e = io_call(b, CLOAK_BLOCK_WRITE, offset + done, bounce ? rt_bounce : p + done, n);
		if (e)
			return (int)e;
		done += n;
	}
	return 0;
}

int cloak_rt_block_flush_now(const struct cloak_block *b)
{
	flush_block = (struct cloak_hc_block_io){ .handle = b->handle, .op = CLOAK_BLOCK_FLUSH };
	return (int)cloak_hypercall(CLOAK_HC_BLOCK_IO, &flush_block);
}

int cloak_rt_block_submit_now(const struct cloak_block *b, struct cloak_block_req *reqs,
			      size_t n)
{
	int in_place = n <= SIZE_MAX / sizeof *reqs && io_reachable(reqs, n * sizeof *reqs);
	int failed = 0;
	for (size_t done = 0; done < n;) {
		size_t k = n - done < CLOAK_BLOCK_BATCH_MAX ? n - done : CLOAK_BLOCK_BATCH_MAX;
		struct cloak_block_req *r = in_place ? reqs + done : batch_reqs;
		if (!in_place)
			io_copy(batch_reqs, reqs + done, k * sizeof *reqs);
		batch_block.handle = b->handle;
		batch_block.reqs = (uint64_t)(uintptr_t)r;
		batch_block.count = k;
		int64_t e = cloak_hypercall(CLOAK_HC_BLOCK_BATCH, &batch_block);
		if (e < 0)
			return (int)e;
		if (!in_place)
			for (size_t i = 0; i < k; i++)
				reqs[done + i].ret = batch_reqs[i].ret;
		failed += (int)e;
		done += k;
	}
	return failed;
}

/* SPDX-License-Identifier: ISC */
/*
 * Block throughput, timed inside the guest (bench/io_bench runs it):
 *   block_bench NAME MIB [MODE...]
 * Writes then reads MIB MiB sequentially in 1 MiB requests, two ways:
 *   copy:   from/to a private buffer, copied through the bounce pool
 *           (what any application buffer costs with protection on)
 *   bounce: data already in the bounce pool, no copy (non-secret bulk data)
 *   bounce-4k, copy-4k: the same with one 4 KiB sector per call, as Solo5
 *           does
 *   raw-4k: bounce-4k without the runtime's code: the guest issues the
 *           call itself from one prepared argument block (the floor that
 *           runtime code adds to)
 *   batch-4k: 4 KiB requests from the bounce pool, CLOAK_BLOCK_BATCH_MAX of
 *           them to a cloak_block_submit() (one exit), the request array
 *           at the end of the pool (used in place, no copy)
 * Without MODE arguments it runs copy, bounce and bounce-4k.
 * Without protection (block_bench_direct) both go straight to the buffer.
 * Prints "RESULT mode write_MBps read_MBps" with MB/s x10 as integers (the
 * write figure includes the final flush), then "NOFLUSH mode write_MBps",
 * the writes before the flush.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloak/block.h"
#include "cloak/guest.h"

/* 1 MiB of bounce pool, so requests can be the call's full 1 MiB. */
const unsigned cloak_config_bounce_pages = 256;

#define REQ (1u << 20)
static unsigned char private_buf[REQ] __attribute__((aligned(4096)));

static uint64_t rate_x10(uint64_t bytes, uint64_t ns)
{
	return ns ? bytes * 10000ull / ns : 0;
}

static struct cloak_hc_block_io raw_block __attribute__((section(".data.shared"), aligned(64)));

/* CLOAK_BLOCK_BATCH_MAX requests of req bytes from off, buffers one after
 * another from buf, one cloak_block_submit(); the array is set in main. */
static struct cloak_block_req *reqs;
static int batch(const struct cloak_block *b, uint64_t op, uint64_t off, unsigned char *buf,
		 size_t req)
{
	for (unsigned i = 0; i < CLOAK_BLOCK_BATCH_MAX; i++)
		reqs[i] = (struct cloak_block_req){ .op = op, .offset = off + i * req,
						    .buf = (uintptr_t)(buf + i * req), .len = req };
	return cloak_block_submit(b, reqs, CLOAK_BLOCK_BATCH_MAX);
}

static int io(const struct cloak_block *b, int raw, uint64_t op, uint64_t off, void *buf,
	      size_t req)
{
	if (raw == 2)
		return batch(b, op, off, buf, req);
	if (raw) {
		raw_block.op = op;
		raw_block.offset = off;
		return (int)cloak_hypercall(CLOAK_HC_BLOCK_IO, &raw_block);
	}
	return op == CLOAK_BLOCK_WRITE ? cloak_block_write(b, off, buf, req)
				       : cloak_block_read(b, off, buf, req);
}

static int run(const struct cloak_block *b, unsigned char *buf, uint64_t total, size_t req,
	       int raw, const char *mode)
{
	/* raw == 2: batches of CLOAK_BLOCK_BATCH_MAX requests of req bytes. */
	uint64_t step = raw == 2 ? req * CLOAK_BLOCK_BATCH_MAX : req;
	raw_block = (struct cloak_hc_block_io){ .handle = b->handle, .buf = (uintptr_t)buf,
						.len = req };
	uint64_t t0 = cloak_time_ns();
	for (uint64_t off = 0; off < total; off += step)
		if (io(b, raw, CLOAK_BLOCK_WRITE, off, buf, req))
			return printf("write failed\n"), 1;
	uint64_t tw = cloak_time_ns();
	if (cloak_block_flush(b))
		return printf("flush failed\n"), 1;
	uint64_t t1 = cloak_time_ns();
	for (uint64_t off = 0; off < total; off += step)
		if (io(b, raw, CLOAK_BLOCK_READ, off, buf, req))
			return printf("read failed\n"), 1;
	uint64_t t2 = cloak_time_ns();
	printf("RESULT %s %llu %llu\n", mode, (unsigned long long)rate_x10(total, t1 - t0),
	       (unsigned long long)rate_x10(total, t2 - t1));
	/* The writes alone, as a peer without a flush call measures them. */
	printf("NOFLUSH %s %llu\n", mode, (unsigned long long)rate_x10(total, tw - t0));
	return 0;
}

int main(int argc, char **argv)
{
	struct cloak_block b;
	if (argc < 3 || cloak_block_open(argv[1], &b))
		return printf("usage: block_bench NAME MIB (with --block NAME=IMG)\n"), 2;
	uint64_t total = strtoull(argv[2], NULL, 0) << 20;
	if (total > b.capacity)
		return printf("image too small\n"), 2;
	size_t bsz;
	unsigned char *bounce = cloak_bounce_area(&bsz);
	if (bsz < REQ)
		return printf("bounce pool too small\n"), 2;
	printf("protection 0x%llx\n", (unsigned long long)cloak_protection());
	reqs = (struct cloak_block_req *)(bounce + bsz) - CLOAK_BLOCK_BATCH_MAX;
	static const struct {
		const char *name;
		int private, raw;
		size_t req;
	} mode_table[] = {
		{ "copy", 1, 0, REQ },	      { "bounce", 0, 0, REQ },	  { "bounce-4k", 0, 0, 4096 },
		{ "copy-4k", 1, 0, 4096 }, { "raw-4k", 0, 1, 4096 },	  { "batch-4k", 0, 2, 4096 },
	};
	static const char *const defaults[] = { "copy", "bounce", "bounce-4k" };
	const char *const *modes = argc > 3 ? (const char *const *)argv + 3 : defaults;
	int nmodes = argc > 3 ? argc - 3 : 3;
	for (int i = 0; i < nmodes; i++) {
		unsigned m = 0;
		while (m < sizeof mode_table / sizeof mode_table[0] && strcmp(mode_table[m].name, modes[i]))
			m++;
		if (m == sizeof mode_table / sizeof mode_table[0])
			return printf("unknown mode %s: use copy, bounce, bounce-4k, copy-4k, "
				      "raw-4k or batch-4k\n", modes[i]), 2;
		if (run(&b, mode_table[m].private ? private_buf : bounce, total, mode_table[m].req,
			mode_table[m].raw, modes[i]))
			return 1;
	}
	return 0;
}

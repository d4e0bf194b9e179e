/* SPDX-License-Identifier: ISC */
/*
 * Block throughput, timed inside the guest (bench/io_bench runs it):
 *   block_bench NAME MIB
 * Writes then reads MIB MiB sequentially in 1 MiB requests, two ways:
 *   copy:   from/to a private buffer, copied through the bounce pool
 *           (what any application buffer costs with protection on)
 *   bounce: data already in the bounce pool, no copy (non-secret bulk data)
 *   bounce-4k: the same with one 4 KiB sector per call, as Solo5 does
 * Without protection (block_bench_direct) both go straight to the buffer.
 * Prints "RESULT mode write_MBps read_MBps" with MB/s x10 as integers.
 */
#include <stdio.h>
#include <stdlib.h>

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

static int run(const struct cloak_block *b, unsigned char *buf, uint64_t total, size_t req,
	       const char *mode)
{
	uint64_t t0 = cloak_time_ns();
	for (uint64_t off = 0; off < total; off += req)
		if (cloak_block_write(b, off, buf, req))
			return printf("write failed\n"), 1;
	if (cloak_block_flush(b))
		return printf("flush failed\n"), 1;
	uint64_t t1 = cloak_time_ns();
	for (uint64_t off = 0; off < total; off += req)
		if (cloak_block_read(b, off, buf, req))
			return printf("read failed\n"), 1;
	uint64_t t2 = cloak_time_ns();
	printf("RESULT %s %llu %llu\n", mode, (unsigned long long)rate_x10(total, t1 - t0),
	       (unsigned long long)rate_x10(total, t2 - t1));
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
	return run(&b, private_buf, total, REQ, "copy") || run(&b, bounce, total, REQ, "bounce") ||
	       run(&b, bounce, total, 4096, "bounce-4k");
}

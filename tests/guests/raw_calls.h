/* SPDX-License-Identifier: ISC */
/*
 * Raw calls for the hostile test guests (hostile.c, threat_emulation.c):
 * argument blocks in one page of the shared call area, every value passed
 * as the test chose it, nothing checked on the guest side. Results are
 * printed as "NAME ret=N" lines for the bats suites to match.
 */
#ifndef CLOAK_TESTS_RAW_CALLS_H
#define CLOAK_TESTS_RAW_CALLS_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cloak/guest.h"

static union {
	struct cloak_hc_console con;
	struct cloak_hc_random rnd;
	struct cloak_hc_share sh;
	struct cloak_hc_block_info info;
	struct cloak_hc_block_io bio;
	struct cloak_hc_block_batch batch;
	struct cloak_hc_nop nop;
	unsigned char page[4096];
} blk __attribute__((section(".data.shared"), aligned(4096)));

static inline void report(const char *name, int64_t ret)
{
	printf("%s ret=%lld\n", name, (long long)ret);
}

static inline int64_t console(uint64_t buf, uint64_t len)
{
	memset(&blk, 0, sizeof blk.con);
	blk.con.buf = buf;
	blk.con.len = len;
	return cloak_hypercall(CLOAK_HC_CONSOLE, &blk.con);
}

static inline int64_t rnd(uint64_t buf, uint64_t len)
{
	memset(&blk, 0, sizeof blk.rnd);
	blk.rnd.buf = buf;
	blk.rnd.len = len;
	return cloak_hypercall(CLOAK_HC_RANDOM, &blk.rnd);
}

/* SHARE or UNSHARE (nr) of n pages at gpa. */
static inline int64_t share(unsigned nr, uint64_t gpa, uint64_t n)
{
	memset(&blk, 0, sizeof blk.sh);
	blk.sh.gpa = gpa;
	blk.sh.npages = n;
	return cloak_hypercall(nr, &blk.sh);
}

/* BLOCK_BATCH of count requests at reqs on device handle. */
static inline int64_t block_batch(uint64_t handle, uint64_t reqs, uint64_t count)
{
	memset(&blk, 0, sizeof blk.batch);
	blk.batch.handle = handle;
	blk.batch.reqs = reqs;
	blk.batch.count = count;
	return cloak_hypercall(CLOAK_HC_BLOCK_BATCH, &blk.batch);
}

#endif

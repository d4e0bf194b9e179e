/* SPDX-License-Identifier: ISC */
/*
 * Threat test 4 (docs/threat-model.md): a guest user attacking through the
 * monitor's device emulation with the range tricks hostile.c does not
 * cover: overlapping SHARE/UNSHARE ranges, ranges unshared between calls,
 * buffers straddling a shared and a private page (no partial copy either
 * way), SHARE calls that fail part-way, wrapped-around buffers for the
 * device calls, a buffer overlapping its own argument block, and an
 * argument block unshared by its own call. Prints "NAME ret=N" and
 * "NAME=VALUE" lines; with --block=disk=IMG it adds the block cases.
 *
 * Six private pages P0..P5 each start with "HEAD-i" and end with "TAIL-i",
 * so a console write across a page border prints e.g. "TAIL-0HEAD-1".
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cloak/guest.h"
#include "raw_calls.h"

static unsigned char area[6][4096] __attribute__((aligned(4096)));

/* Console write of 12 bytes across the border of pages i and i+1. */
static int64_t border(int i)
{
	int64_t r = console((uintptr_t)&area[i][4096 - 6], 12);
	if (r > 0)
		printf("\n");
	return r;
}

static int64_t block_read(uint64_t handle, uint64_t buf, uint64_t len)
{
	memset(&blk, 0, sizeof blk.bio);
	blk.bio.handle = handle;
	blk.bio.op = CLOAK_BLOCK_READ;
	blk.bio.buf = buf;
	blk.bio.len = len;
	return cloak_hypercall(CLOAK_HC_BLOCK_IO, &blk.bio);
}

static const char *untouched(const unsigned char *p, unsigned char c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != c)
			return "no";
	return "yes";
}

static void overlapping_ranges(void)
{
	report("share_p0_p2", share(CLOAK_HC_SHARE, (uintptr_t)area[0], 3));
	report("share_p2_p4_overlapping", share(CLOAK_HC_SHARE, (uintptr_t)area[2], 3));
	report("share_p1_p2_inside", share(CLOAK_HC_SHARE, (uintptr_t)area[1], 2));
	report("console_p0_p1_shared", border(0));
	report("unshare_p1", share(CLOAK_HC_UNSHARE, (uintptr_t)area[1], 1));
	report("console_p0_p1_after_unshare", border(0));
	report("console_p1_p2_after_unshare", border(1));
	report("console_p2_p3_still_shared", border(2));
	report("unshare_p3_p5_partly_private", share(CLOAK_HC_UNSHARE, (uintptr_t)area[3], 3));
	report("console_p2_p3_after_unshare", border(2));
	report("console_p3_p4_after_unshare", border(3));
}

static void unshared_between_calls(void)
{
	/* P2 is shared: a first call may write it, a call after UNSHARE not. */
	report("random_p2_shared", rnd((uintptr_t)area[2], 16));
	memset(area[2], 'K', 64);
	report("unshare_p2", share(CLOAK_HC_UNSHARE, (uintptr_t)area[2], 1));
	report("random_p2_after_unshare", rnd((uintptr_t)area[2], 16));
	printf("random_p2_after_unshare_untouched=%s\n", untouched(area[2], 'K', 64));
}

static void straddling(uint64_t disk, int have_disk)
{
	/* P0 shared, P1 private: nothing may be written to either part. */
	memset(&area[0][4096 - 512], 'S', 512);
	memset(area[1], 'P', 512);
	report("random_p0_p1_straddle", rnd((uintptr_t)&area[0][4096 - 8], 16));
	printf("random_straddle_shared_part_untouched=%s\n",
	       untouched(&area[0][4096 - 8], 'S', 8));
	printf("random_straddle_private_part_untouched=%s\n", untouched(area[1], 'P', 8));
	if (!have_disk)
		return;
	report("block_read_p0_p1_straddle", block_read(disk, (uintptr_t)&area[0][4096 - 512], 1024));
	printf("block_straddle_shared_part_untouched=%s\n",
	       untouched(&area[0][4096 - 512], 'S', 512));
	printf("block_straddle_private_part_untouched=%s\n", untouched(area[1], 'P', 512));
	report("block_read_wraps", block_read(disk, UINT64_MAX - 511, 1024));
	report("block_read_beyond_end", block_read(disk, cloak_boot_info()->mem_size - 512, 1024));
}

static void failed_share_has_no_effect(void)
{
	uint64_t mem = cloak_boot_info()->mem_size;
	uint64_t to_end = (mem - (uintptr_t)area[4]) / 4096;
	report("share_p4_past_end", share(CLOAK_HC_SHARE, (uintptr_t)area[4], to_end + 1));
	report("console_p4_p5_after_failed_share", border(4));
	/* From P0 (shared) with a count that wraps: refused, P0 stays shared. */
	report("unshare_p0_wraps", share(CLOAK_HC_UNSHARE, (uintptr_t)area[0], UINT64_MAX / 4096 + 2));
	report("console_p0_after_failed_unshare", console((uintptr_t)area[0], 6));
	report("random_wraps", rnd(UINT64_MAX - 7, 16));
}

static void argument_block_games(void)
{
	/* The buffer is the argument block itself: the reply wins, intact. */
	int64_t r = rnd((uintptr_t)&blk, 24);
	printf("random_onto_own_block ret=%lld len=%llu\n", (long long)r,
	       (unsigned long long)blk.rnd.len);
	/* An UNSHARE of the page its own block is in: the monitor must not
	 * write the reply into what is now a private page. */
	struct cloak_hc_share *own = (struct cloak_hc_share *)area[0];
	own->ret = 77;
	own->gpa = (uintptr_t)area[0];
	own->npages = 1;
	__asm__ volatile("outl %0, %w1" : : "a"((uint32_t)(uintptr_t)own),
			 "Nd"((uint16_t)(CLOAK_HC_PORT_BASE + CLOAK_HC_UNSHARE)) : "memory");
	report("unshare_own_block", own->ret);
}

int main(void)
{
	for (int i = 0; i < 6; i++) {
		memset(area[i], '.', 4096);
		snprintf((char *)area[i], 8, "HEAD-%d", i);
		memcpy(&area[i][4096 - 6], "TAIL-", 5);
		area[i][4095] = (unsigned char)('0' + i);
	}
	memset(&blk, 0, sizeof blk.info);
	strcpy(blk.info.name, "disk");
	int have_disk = cloak_hypercall(CLOAK_HC_BLOCK_INFO, &blk.info) == 0;
	uint64_t disk = blk.info.handle;
	overlapping_ranges();
	unshared_between_calls();
	straddling(disk, have_disk);
	failed_share_has_no_effect();
	argument_block_games();
	return 0;
}

/* SPDX-License-Identifier: ISC */
/* Call overhead inside a guest, timed with rdtsc: a bare port-I/O exit
 * (CLOAK_PORT_NULL, no handler), a null call (NOP), the wall clock and a
 * poll with nothing to wait for, all in the same run. */
#include <stdio.h>
#include <stdlib.h>

#include "cloak/guest.h"

static struct cloak_hc_nop nop_block __attribute__((section(".data.shared"), aligned(64)));

static uint64_t bare(unsigned n)
{
	uint64_t t = cloak_rdtsc();
	for (unsigned i = 0; i < n; i++)
		__asm__ volatile("outl %0, %w1" : : "a"(0u), "Nd"((uint16_t)CLOAK_PORT_NULL));
	return cloak_rdtsc() - t;
}

static uint64_t nop(unsigned n)
{
	uint64_t t = cloak_rdtsc();
	for (unsigned i = 0; i < n; i++)
		cloak_hypercall(CLOAK_HC_NOP, &nop_block);
	return cloak_rdtsc() - t;
}

static uint64_t wall(unsigned n)
{
	uint64_t t = cloak_rdtsc();
	for (unsigned i = 0; i < n; i++)
		(void)cloak_walltime_ns();
	return cloak_rdtsc() - t;
}

static uint64_t poll0(unsigned n)
{
	uint64_t t = cloak_rdtsc();
	for (unsigned i = 0; i < n; i++)
		cloak_poll(0, 0, NULL);
	return cloak_rdtsc() - t;
}

static uint64_t per_call_ns(uint64_t ticks, uint64_t khz, unsigned n)
{
	return ticks * 1000000ull / khz / n;
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 2000;
	uint64_t khz = cloak_boot_info()->tsc_khz;
	/* Interleave rounds so drift on a shared machine hits both alike;
	 * keep the best round of each. */
	uint64_t best_bare = UINT64_MAX, best_nop = UINT64_MAX;
	uint64_t best_wall = UINT64_MAX, best_poll = UINT64_MAX;
	for (int r = 0; r < 5; r++) {
		uint64_t b = bare(n), c = nop(n), w = wall(n), p = poll0(n);
		if (b < best_bare)
			best_bare = b;
		if (c < best_nop)
			best_nop = c;
		if (w < best_wall)
			best_wall = w;
		if (p < best_poll)
			best_poll = p;
	}
	printf("bare_exit_ns=%llu null_call_ns=%llu walltime_ns=%llu poll0_ns=%llu "
	       "ratio_x1000=%llu\n",
	       (unsigned long long)per_call_ns(best_bare, khz, n),
	       (unsigned long long)per_call_ns(best_nop, khz, n),
	       (unsigned long long)per_call_ns(best_wall, khz, n),
	       (unsigned long long)per_call_ns(best_poll, khz, n),
	       (unsigned long long)(best_nop * 1000 / best_bare));
	return 0;
}

/* SPDX-License-Identifier: ISC */
/* Call overhead inside a guest: a null call (NOP) against a bare port-I/O
 * exit (CLOAK_PORT_NULL) in the same run, timed with rdtsc. */
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

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 2000;
	uint64_t khz = cloak_boot_info()->tsc_khz;
	/* Interleave rounds so drift on a shared machine hits both alike;
	 * keep the best round of each. */
	uint64_t best_bare = UINT64_MAX, best_nop = UINT64_MAX;
	for (int r = 0; r < 5; r++) {
		uint64_t b = bare(n), c = nop(n);
		if (b < best_bare)
			best_bare = b;
		if (c < best_nop)
			best_nop = c;
	}
	uint64_t bare_ns = best_bare * 1000000ull / khz / n;
	uint64_t nop_ns = best_nop * 1000000ull / khz / n;
	printf("bare_exit_ns=%llu null_call_ns=%llu ratio_x1000=%llu\n",
	       (unsigned long long)bare_ns, (unsigned long long)nop_ns,
	       (unsigned long long)(best_nop * 1000 / best_bare));
	return 0;
}

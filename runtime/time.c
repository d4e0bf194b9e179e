/* SPDX-License-Identifier: ISC */
/* Time, sleep/poll and host randomness. */
#include "cloak/guest.h"
#include "rt.h"

static struct cloak_hc_walltime walltime_block RT_SHARED;
struct cloak_hc_poll cloak_rt_poll_block RT_SHARED; /* cloak_poll(), inline in cloak/guest.h */
static struct cloak_hc_random random_block RT_SHARED;

uint64_t cloak_time_ns(void)
{
	uint64_t khz = rt_boot->tsc_khz;
	uint64_t t = cloak_rdtsc();
	/* ns = t * 1e6 / khz, split to avoid overflow for long uptimes. */
	return (t / khz) * 1000000ull + (t % khz) * 1000000ull / khz;
}

uint64_t cloak_walltime_ns(void)
{
	cloak_hypercall(CLOAK_HC_WALLTIME, &walltime_block);
	return walltime_block.epoch_ns;
}

int cloak_random(void *buf, size_t len)
{
	unsigned char *p = buf;
	while (len) {
		size_t n = len > CLOAK_RANDOM_MAX ? CLOAK_RANDOM_MAX : len;
		random_block.buf = (uint64_t)(uintptr_t)rt_bounce;
		random_block.len = n;
		int64_t r = cloak_hypercall(CLOAK_HC_RANDOM, &random_block);
		if (r < 0)
			return (int)r;
		cloak_copy(p, rt_bounce, n);
		/* Random bytes for a key must not linger in shared memory. */
		void *b = rt_bounce;
		size_t z = n;
		__asm__ volatile("rep stosb" : "+D"(b), "+c"(z) : "a"(0) : "memory");
		p += n;
		len -= n;
	}
	return 0;
}

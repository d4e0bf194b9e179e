/* SPDX-License-Identifier: ISC */
/* Wall clock, monotonic clock, sleeping in the monitor, host randomness. */
#include <stdio.h>
#include <string.h>

#include "cloak/guest.h"

int main(void)
{
	printf("walltime_s=%llu\n", (unsigned long long)(cloak_walltime_ns() / 1000000000ull));
	uint64_t t0 = cloak_time_ns();
	uint64_t t1 = cloak_time_ns();
	if (t1 >= t0)
		printf("monotonic ok\n");
	/* Sleeping 50 ms must take at least 50 ms of guest-visible time. */
	uint64_t s0 = cloak_time_ns();
	cloak_poll(50000000ull, 0, NULL);
	uint64_t slept = cloak_time_ns() - s0;
	if (slept >= 50000000ull && slept < 5000000000ull)
		printf("sleep ok (%llu us)\n", (unsigned long long)(slept / 1000));
	unsigned char a[64], b[64];
	memset(a, 0, sizeof a);
	memset(b, 0, sizeof b);
	if (cloak_random(a, sizeof a) == 0 && cloak_random(b, sizeof b) == 0 &&
	    memcmp(a, b, sizeof a) != 0)
		printf("random ok\n");
	return 0;
}

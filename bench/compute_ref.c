/* SPDX-License-Identifier: ISC */
/* The host reference for the guest-compute benchmark: the same work
 * (bench/compute_work.h) in an ordinary process, same output line. */
#include <stdio.h>
#include <time.h>

#include "compute_work.h"

static unsigned char src[COMPUTE_COPY_BYTES], dst[COMPUTE_COPY_BYTES];

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(void)
{
	struct compute_result r = { 0 };
	compute_run(now_ns, dst, src, &r);
	printf("RESULT loop_ps=%llu copy_MBps=%llu iterations=%llu (sink %llu)\n",
	       (unsigned long long)r.loop_ps, (unsigned long long)r.copy_mbps,
	       (unsigned long long)r.iterations, (unsigned long long)(r.sink & 1));
	return 0;
}

/* SPDX-License-Identifier: ISC */
/* Guest compute (bench/compute_work.h) timed with the TSC inside the guest;
 * prints "RESULT loop_ps=N copy_MBps=N iterations=N". */
#include <stdio.h>

#include "cloak/guest.h"
#include "../compute_work.h"

static unsigned char src[COMPUTE_COPY_BYTES], dst[COMPUTE_COPY_BYTES];
static uint64_t khz;

static uint64_t now_ns(void)
{
	return cloak_rdtsc() * 1000000ull / khz;
}

int main(void)
{
	struct compute_result r = { 0 };
	khz = cloak_boot_info()->tsc_khz;
	if (!khz) {
		printf("no TSC frequency in the boot info\n");
		return 1;
	}
	compute_run(now_ns, dst, src, &r);
	printf("RESULT loop_ps=%llu copy_MBps=%llu iterations=%llu (sink %llu)\n",
	       (unsigned long long)r.loop_ps, (unsigned long long)r.copy_mbps,
	       (unsigned long long)r.iterations, (unsigned long long)(r.sink & 1));
	return 0;
}

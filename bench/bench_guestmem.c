/* SPDX-License-Identifier: ISC */
/*
 * Host-side cost of protection: SHARE+UNSHARE over 1 GiB of pages, and a
 * checked copy (gm_copy_from with protection on) next to plain memcpy from
 * the same memory, in the same run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cloak/abi.h"
#include "mem/guestmem.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(void)
{
	struct fail f = { 0 };
	const uint64_t gib = 1ull << 30;
	struct guestmem *gm = gm_create(GM_BACKEND_ANON, gib, -1, &f);
	if (!gm) {
		fprintf(stderr, "bench_guestmem: %s\n", f.msg);
		return 1;
	}
	gm_protect(gm);
	const uint64_t pages = gib / CLOAK_PAGE_SIZE;

	/* Whole-range calls, and page-at-a-time calls (the pKVM pattern). */
	int reps = 200;
	double t0 = now_s();
	for (int r = 0; r < reps; r++) {
		gm_share(gm, gpa(0), pages);
		gm_unshare(gm, gpa(0), pages);
	}
	double whole = (now_s() - t0) / reps;
	t0 = now_s();
	for (uint64_t p = 0; p < pages; p++)
		gm_share(gm, gpa(p * CLOAK_PAGE_SIZE), 1);
	for (uint64_t p = 0; p < pages; p++)
		gm_unshare(gm, gpa(p * CLOAK_PAGE_SIZE), 1);
	double single = now_s() - t0;

	/* Checked copy vs memcpy: 4 KiB and 64 KiB copies out of shared pages. */
	gm_share(gm, gpa(0), 64 * 1024 / CLOAK_PAGE_SIZE * 64);
	static unsigned char src[65536], dst[65536];
	memset(src, 7, sizeof src);
	gm_copy_to(gm, gpa(0), src, sizeof src);
	printf("| guest memory (host side) | figure | reference | ratio |\n|---|---|---|---|\n");
	printf("| SHARE+UNSHARE 1 GiB, one call each | %.0f Mpages/s | - | - |\n",
	       2.0 * (double)pages / whole / 1e6);
	printf("| SHARE+UNSHARE 1 GiB, one page per call | %.1f Mpages/s | - | - |\n",
	       2.0 * (double)pages / single / 1e6);
	size_t sizes[] = { 64, 4096, 65536 };
	for (size_t k = 0; k < 3; k++) {
		size_t sz = sizes[k];
		long n = (long)(200000000 / (sz + 64));
		double best_c = 1e9, best_m = 1e9;
		for (int round = 0; round < 5; round++) {
			t0 = now_s();
			for (long i = 0; i < n; i++) {
				gm_copy_from(gm, dst, gpa((uint64_t)(i & 15) * 64), sz);
				__asm__ volatile("" : : "r"(dst) : "memory");
			}
			double c = now_s() - t0;
			t0 = now_s();
			for (long i = 0; i < n; i++) {
				memcpy(dst, src + (i & 15) * 64 % (sizeof src - sz + 1), sz);
				__asm__ volatile("" : : "r"(dst) : "memory");
			}
			double m = now_s() - t0;
			if (c < best_c)
				best_c = c;
			if (m < best_m)
				best_m = m;
		}
		printf("| checked copy %zu B | %.1f ns | memcpy %.1f ns | %.2fx |\n", sz,
		       best_c / (double)n * 1e9, best_m / (double)n * 1e9, best_c / best_m);
	}
	gm_destroy(gm);
	return 0;
}

/* SPDX-License-Identifier: ISC */
/*
 * The guest-compute benchmark's work, compiled into both the guest
 * (bench/guests/compute.c) and its host reference (bench/compute_ref.c) so
 * that the two run the same instructions: an integer loop (xorshift and a
 * multiply an iteration) and a block copy with `rep movsb`. Each side
 * passes its own clock.
 */
#ifndef CLOAK_BENCH_COMPUTE_WORK_H
#define CLOAK_BENCH_COMPUTE_WORK_H

#include <stddef.h>
#include <stdint.h>

#define COMPUTE_COPY_BYTES (1u << 20)

struct compute_result {
	uint64_t loop_ps;   /* picoseconds an iteration, best of 3 */
	uint64_t copy_mbps; /* MB/s copying COMPUTE_COPY_BYTES, best of 5 */
	uint64_t iterations;
	uint64_t sink;      /* keeps the loop's result alive */
};

static inline uint64_t compute_loop(uint64_t n)
{
	uint64_t x = 0x9e3779b97f4a7c15ull, acc = 0;
	for (uint64_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		acc += x * (i | 1);
	}
	/* The result exists before the caller reads its clock again: pure
	 * arithmetic could otherwise be moved past that call. */
	__asm__ volatile("" : : "r"(acc) : "memory");
	return acc;
}

static inline void compute_copy(void *dst, const void *src, size_t n)
{
	__asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}

/* Doubles the loop count until one run takes 100 ms (so the figure is
 * long enough to trust on a KVM that emulates guest code and on one that
 * does not), then keeps the best of 3 runs at that count. */
static inline void compute_run(uint64_t (*now_ns)(void), void *dst, const void *src,
			       struct compute_result *r)
{
	uint64_t n = 1000, t = 0, best = UINT64_MAX;
	for (;;) {
		uint64_t t0 = now_ns();
		r->sink += compute_loop(n);
		t = now_ns() - t0;
		if (t >= 100000000ull || n >= (1ull << 40))
			break;
		n *= 2;
	}
	for (int k = 0; k < 3; k++) {
		uint64_t t0 = now_ns();
		r->sink += compute_loop(n);
		t = now_ns() - t0;
		if (t < best)
			best = t;
	}
	r->iterations = n;
	r->loop_ps = best * 1000 / n;
	best = UINT64_MAX;
	for (int k = 0; k < 5; k++) {
		uint64_t t0 = now_ns();
		compute_copy(dst, src, COMPUTE_COPY_BYTES);
		t = now_ns() - t0;
		if (t < best)
			best = t;
	}
	r->copy_mbps = best ? (uint64_t)COMPUTE_COPY_BYTES * 1000 / best : 0;
}

#endif

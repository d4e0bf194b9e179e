/* SPDX-License-Identifier: ISC */
/*
 * The key services' ECDSA (services/common/ecdsa.c: Nettle with RFC 6979
 * nonces) against the BearSSL code it replaced (br_ecdsa_i31_sign_raw on
 * br_ec_all_m31), on the host, same key and hash, in interleaved rounds:
 * microseconds per signature, medians, and the ratio. The two give the
 * same signature (test_p11_ec), so this is the cost of one and the same
 * result.
 *   bench_ecdsa [ROUNDS]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bearssl.h>

#include "ecdsa.h"

#define PER_ROUND 200

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void row(const char *name, const struct ecdsa_curve *c, int bear_id, int rounds)
{
	uint8_t d[ECDSA_SCALAR_MAX], h[ECDSA_SCALAR_MAX], sig[2 * ECDSA_SCALAR_MAX];
	memset(d, 0x3c, sizeof d);
	memset(h, 0xa7, sizeof h);
	br_ec_private_key sk = { bear_id, d, c->scalar };
	double nettle[64], bear[64];
	for (int r = 0; r < rounds; r++) {
		double t0 = now_us();
		for (int i = 0; i < PER_ROUND; i++)
			if (!ecdsa_sign_rfc6979(c, d, h, sig))
				exit(1);
		double t1 = now_us();
		for (int i = 0; i < PER_ROUND; i++)
			if (br_ecdsa_i31_sign_raw(&br_ec_all_m31, c->hash, h, &sk, sig) != 2 * c->scalar)
				exit(1);
		double t2 = now_us();
		nettle[r] = (t1 - t0) / PER_ROUND;
		bear[r] = (t2 - t1) / PER_ROUND;
	}
	double n = median(nettle, rounds), b = median(bear, rounds);
	printf("| %s | %.1f | %.1f | %.3f |\n", name, n, b, n / b);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 5;
	if (rounds < 1 || rounds > 64) {
		fprintf(stderr, "bench_ecdsa: ROUNDS must be 1 to 64\n");
		return 2;
	}
	printf("## ECDSA signatures on the host: ecdsa.c (Nettle) against BearSSL's m31/i31, "
	       "%d rounds of %d each, medians\n\n",
	       rounds, PER_ROUND);
	printf("| curve | ecdsa.c, µs | BearSSL, µs | ecdsa.c / BearSSL |\n|---|---|---|---|\n");
	row("P-256", &ecdsa_p256, BR_EC_secp256r1, rounds);
	row("P-384", &ecdsa_p384, BR_EC_secp384r1, rounds);
	return 0;
}

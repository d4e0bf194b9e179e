/* SPDX-License-Identifier: ISC */
/* Entropy: see entropy.h. Every source's bytes go into one seed
 * buffer in private memory that is wiped after the DRBG has absorbed it;
 * a weak or hostile source cannot make the mix weaker than the others. */
#include "entropy.h"

#include <stdio.h>
#include <string.h>

#include <bearssl/bearssl_hash.h>

#include "cloak/guest.h"

#define WORDS 4   /* 32 bytes from each CPU source */
#define RETRIES 32 /* Intel's guidance for RDRAND; RDSEED may need more */

static void cpuid(unsigned leaf, unsigned *b, unsigned *c)
{
	unsigned a, d;
	__asm__ volatile("cpuid" : "=a"(a), "=b"(*b), "=c"(*c), "=d"(d) : "a"(leaf), "c"(0));
}

/* One 64-bit value; returns 1 if the CPU reported success (CF = 1). */
static int rdrand64(uint64_t *v)
{
	unsigned char ok;
	__asm__ volatile("rdrand %0; setc %1" : "=r"(*v), "=qm"(ok) : : "cc");
	return ok;
}

static int rdseed64(uint64_t *v)
{
	unsigned char ok;
	__asm__ volatile("rdseed %0; setc %1" : "=r"(*v), "=qm"(ok) : : "cc");
	return ok;
}

/* Fills out[WORDS] from `get`; returns 1 only if every word succeeded. */
static int cpu_words(int (*get)(uint64_t *), uint64_t *out)
{
	for (int i = 0; i < WORDS; i++) {
		int tries = 0;
		while (!get(&out[i]))
			if (++tries == RETRIES)
				return 0;
	}
	return 1;
}

int entropy_seed(br_hmac_drbg_context *drbg, char *report, size_t report_len)
{
	uint64_t seed[3 * WORDS];
	size_t n = 0;
	int sources = 0;
	unsigned b, c, max_leaf, unused;
	cpuid(0, &max_leaf, &unused);
	cpuid(1, &b, &c);
	int has_rdrand = (c >> 30) & 1;
	int has_rdseed = 0;
	if (max_leaf >= 7) {
		cpuid(7, &b, &c);
		has_rdseed = (b >> 18) & 1;
	}
	int used_rdseed = has_rdseed && cpu_words(rdseed64, seed + n);
	if (used_rdseed)
		n += WORDS, sources++;
	int used_rdrand = has_rdrand && cpu_words(rdrand64, seed + n);
	if (used_rdrand)
		n += WORDS, sources++;
	int used_host = cloak_random(seed + n, WORDS * 8) == 0;
	if (used_host)
		n += WORDS, sources++;
	br_hmac_drbg_init(drbg, &br_sha256_vtable, seed, n * 8);
	/* An asm wipe: the compiler cannot drop it as a dead store. */
	void *w = seed;
	size_t z = sizeof seed;
	__asm__ volatile("rep stosb" : "+D"(w), "+c"(z) : "a"(0) : "memory");
	snprintf(report, report_len, "entropy: rdseed %s, rdrand %s, host %s",
		 used_rdseed ? "used" : has_rdseed ? "failed" : "absent",
		 used_rdrand ? "used" : has_rdrand ? "failed" : "absent",
		 used_host ? "used" : "failed");
	return sources;
}

/* SPDX-License-Identifier: ISC */
/*
 * Shared by the host tests of the guest runtime's libc (test_rt_libc.c,
 * test_rt_heap.c): glibc's headers under their usual names, the runtime's
 * headers with every libc name renamed to rt_NAME (see rt_rename.h), and a
 * seeded random generator so that failures reproduce.
 */
#ifndef RT_LIBC_TEST_H
#define RT_LIBC_TEST_H

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rt_rename.h"
#include "../../runtime/include/assert.h"
#include "../../runtime/include/ctype.h"
#include "../../runtime/include/errno.h"
#include "../../runtime/include/stdio.h"
#include "../../runtime/include/stdlib.h"
#include "../../runtime/include/string.h"
#include "../../runtime/include/cloak/format.h"
#include "../../runtime/include/cloak/heap.h"
#define RT_UNRENAME
#include "rt_rename.h"
#include <assert.h> /* glibc's assert() again */

/* rt_rename.h took `errno` for the runtime's; glibc's is this. */
#define host_errno (*__errno_location())

/* xorshift64*: small, fast, and the same sequence on every run. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static inline void rng_seed(uint64_t seed)
{
	rng_state = seed ? seed : 1;
}

static inline uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

/* Uniform in [0, n). */
static inline uint64_t rng_below(uint64_t n)
{
	return n ? rng() % n : 0;
}

#endif

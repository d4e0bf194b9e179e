/* SPDX-License-Identifier: ISC */
/*
 * The smallest program that holds a secret, for the start-up figure of
 * bench/libcloak_bench.c: built twice, with libcloak.so (WITH_LIBCLOAK: one
 * cloak_secret_alloc(32), written, freed) and without (malloc instead). The
 * difference of their run times is what libcloak adds to a process's
 * start-up plus its first secret.
 */
#include <stdlib.h>
#include <string.h>
#ifdef WITH_LIBCLOAK
#include <cloak/secret.h>
#define ALLOC(n) cloak_secret_alloc(n)
#define FREE(p) cloak_secret_free(p)
#else
#define ALLOC(n) malloc(n)
#define FREE(p) (explicit_bzero((p), 32), free(p))
#endif

int main(void)
{
	char *key = ALLOC(32);
	if (!key)
		return 1;
	memset(key, 0x5a, 32);
	__asm__ volatile("" : : "r"(key) : "memory");
	FREE(key);
	return 0;
}

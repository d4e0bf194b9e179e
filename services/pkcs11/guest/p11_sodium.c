/* SPDX-License-Identifier: ISC */
/*
 * What the store's objects of Debian's libsodium.a (Argon2id, XChaCha20-
 * Poly1305, BLAKE2b) call beyond services/common's sodium_shim.c and
 * compat.c, for the guest (docs/pkcs11-store.md); its assert() is
 * services/common/nettle_shim.c's. Guest only.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>

#include "cloak/guest.h"

void sodium_misuse(void);
int sodium_memcmp(const void *b1, const void *b2, size_t len);
int *__errno_location(void);

/* libsodium's answer to an API misuse; the store makes none. */
void sodium_misuse(void)
{
	printf("pkcs11: libsodium reported a misuse\n");
	cloak_exit(70);
}

/* Constant time, as libsodium's own: 0 if equal, else -1. */
int sodium_memcmp(const void *b1, const void *b2, size_t len)
{
	const volatile unsigned char *a = b1, *b = b2;
	unsigned d = 0;
	for (size_t i = 0; i < len; i++)
		d |= a[i] ^ b[i];
	return (int)((1u & ((d - 1) >> 8)) - 1);
}

/* The runtime's errno (one vCPU, one thread). */
int *__errno_location(void)
{
	return &errno;
}

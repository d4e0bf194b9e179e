/* SPDX-License-Identifier: ISC */
/*
 * What the Ed25519 objects of Debian's libsodium.a (sign, keypair,
 * ed25519_ref10, hash_sha512_cp) call outside themselves, for the guest.
 * Linking these here keeps libsodium's utils.o and randombytes.o out of
 * the image: they want mmap, mlock, sysconf and a system random source,
 * which a guest does not have. Guest only (the host links libsodium
 * whole); the stack-protector and fortify symbols come from
 * compat.c, as for BearSSL. The token's store (p11_sodium.c) links this
 * too.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "wipe.h"

void sodium_memzero(void *pnt, size_t len);
int sodium_is_zero(const unsigned char *n, size_t nlen);
void randombytes_buf(void *buf, size_t size);

void sodium_memzero(void *pnt, size_t len)
{
	wipe(pnt, len);
}

/* Constant time, as libsodium's own. */
int sodium_is_zero(const unsigned char *n, size_t nlen)
{
	unsigned d = 0;
	for (size_t i = 0; i < nlen; i++)
		d |= n[i];
	return 1 & ((d - 1) >> 8);
}

/* Only crypto_sign_ed25519_keypair() calls this, and the agent never does:
 * its seeds come from its own DRBG (agent_ed25519.c). */
void randombytes_buf(void *buf, size_t size)
{
	(void)buf;
	(void)size;
	abort();
}

/* SPDX-License-Identifier: ISC */
/*
 * What Debian's libhogweed.a and libgmp.a, under ECDSA (ecdsa.c), call of
 * a hosted C library, for the guests: Nettle checks its arguments with
 * assert(); GMP prints allocation failures and its own assertions to
 * stderr. Signatures run on fixed-size limbs in scratch space ecdsa.c
 * gives and reach none of these: if one ever is reached, the guest says
 * so and exits 70. libsodium's objects in the token's store also
 * assert(). Guest only; the host links the real ones.
 *
 * The token's key wrapping calls Nettle's nist_keywrap16 with its own
 * block function (BearSSL's aes_x86ni or aes_ct, p11_aes.c); the same
 * object holds aes128_keywrap and its siblings, which name Nettle's AES,
 * whose run-time choice of implementation (fat-x86_64.o) would bring
 * getenv and a constructor in. Nettle's AES is defined here instead, to stop:
 * nothing the guests do calls it.
 */
#include <stddef.h>
#include <stdio.h>

#include "cloak/guest.h"

void __assert_fail(const char *expr, const char *file, unsigned line, const char *func);
int __fprintf_chk(void *stream, int flag, const char *fmt, ...);
size_t fwrite(const void *p, size_t size, size_t n, void *stream);
int raise(int sig);

/* GMP only passes it to __fprintf_chk and fwrite below. */
void *stderr;
void *stderr = NULL;

void __assert_fail(const char *expr, const char *file, unsigned line, const char *func)
{
	printf("guest: assertion '%s' failed in a library (%s:%u, %s)\n", expr, file, line, func);
	cloak_exit(70);
}

int __fprintf_chk(void *stream, int flag, const char *fmt, ...)
{
	(void)stream;
	(void)flag;
	printf("guest: a library printed an error and stops (\"%s\")\n", fmt);
	cloak_exit(70);
}

size_t fwrite(const void *p, size_t size, size_t n, void *stream)
{
	(void)p;
	(void)size;
	(void)n;
	(void)stream;
	printf("guest: a library wrote to a file and stops\n");
	cloak_exit(70);
}

/* GMP's answer to a division by zero (mpz_powm with a zero modulus, which
 * the token's check of an RSA signature never passes: a loaded key's
 * modulus is at least 2048 bits). */
int raise(int sig)
{
	printf("guest: a library raised signal %d (a division by zero) and stops\n", sig);
	cloak_exit(70);
}

/* Nettle's AES, never called (above). */
void nettle_aes128_encrypt(const void *ctx, size_t length, unsigned char *dst, const unsigned char *src);
void nettle_aes128_decrypt(const void *ctx, size_t length, unsigned char *dst, const unsigned char *src);
void nettle_aes192_encrypt(const void *ctx, size_t length, unsigned char *dst, const unsigned char *src);
void nettle_aes192_decrypt(const void *ctx, size_t length, unsigned char *dst, const unsigned char *src);
void nettle_aes256_encrypt(const void *ctx, size_t length, unsigned char *dst, const unsigned char *src);
void nettle_aes256_decrypt(const void *ctx, size_t length, unsigned char *dst, const unsigned char *src);

static void no_nettle_aes(void)
{
	printf("guest: Nettle's AES called (the guests use BearSSL's); stops\n");
	cloak_exit(70);
}

#define NO_AES(name)                                                                              \
	void name(const void *ctx, size_t length, unsigned char *dst, const unsigned char *src) \
	{                                                                                         \
		(void)ctx, (void)length, (void)dst, (void)src;                                    \
		no_nettle_aes();                                                                  \
	}
NO_AES(nettle_aes128_encrypt)
NO_AES(nettle_aes128_decrypt)
NO_AES(nettle_aes192_encrypt)
NO_AES(nettle_aes192_decrypt)
NO_AES(nettle_aes256_encrypt)
NO_AES(nettle_aes256_decrypt)

/* The token's RSA signatures (p11_rsa.c) use Nettle's PKCS#1 and PSS
 * code, which hashes with Nettle's SHA-1 and SHA-2 and masks with its
 * memxor: three functions that Nettle's fat build picks at run time in
 * fat-x86_64.o (getenv again). They go straight to Nettle's plain x86-64
 * code, the choice fat-x86_64.o makes on a CPU without SHA extensions or
 * SSE2 preference: general registers only, as the guests are built. */
void _nettle_sha256_compress(unsigned *state, const unsigned char *input, const unsigned *k);
void _nettle_sha256_compress_x86_64(unsigned *state, const unsigned char *input, const unsigned *k);
void nettle_sha1_compress(unsigned *state, const unsigned char *input);
void _nettle_sha1_compress_x86_64(unsigned *state, const unsigned char *input);
void *nettle_memxor(void *dst, const void *src, size_t n);
void *_nettle_memxor_x86_64(void *dst, const void *src, size_t n);

void _nettle_sha256_compress(unsigned *state, const unsigned char *input, const unsigned *k)
{
	_nettle_sha256_compress_x86_64(state, input, k);
}

void nettle_sha1_compress(unsigned *state, const unsigned char *input)
{
	_nettle_sha1_compress_x86_64(state, input);
}

void *nettle_memxor(void *dst, const void *src, size_t n)
{
	return _nettle_memxor_x86_64(dst, src, n);
}

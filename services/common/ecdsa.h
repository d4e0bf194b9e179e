/* SPDX-License-Identifier: ISC */
/*
 * ECDSA signatures for both key services (the ssh-agent's P-256, the
 * PKCS#11 token's P-256 and P-384), on Nettle's ECC (side-channel
 * silent, its manual says; GMP's x86-64 assembly underneath), with RFC 6979 nonces made from
 * BearSSL's HMAC_DRBG: a signature is a function of the key and the hash
 * alone, byte for byte the one BearSSL's br_ecdsa_i31_sign_raw gives.
 * Key generation and public points stay on BearSSL. No I/O, no heap;
 * everything secret this module holds is wiped before it returns.
 */
#ifndef SERVICES_ECDSA_H
#define SERVICES_ECDSA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <bearssl/bearssl_hash.h>

#define ECDSA_SCALAR_MAX 48

struct ecc_curve;

struct ecdsa_curve {
	size_t scalar;		   /* bytes of n (a multiple of 8), of d, r and s */
	const uint8_t *order;	   /* n, big-endian */
	const br_hash_class *hash; /* RFC 6979's HMAC: SHA-2 of n's size */
	const struct ecc_curve *(*nettle)(void);
};

extern const struct ecdsa_curve ecdsa_p256, ecdsa_p384;

/* Whether the c->scalar big-endian bytes d lie in [1, n-1]; no branch
 * depends on d. */
bool ecdsa_scalar_ok(const struct ecdsa_curve *c, const uint8_t *d);

/* Signs the hash value hv, c->scalar bytes (the caller truncates or pads
 * a hash of another length as FIPS 186-4 reads it), with the private
 * scalar d (c->scalar bytes); writes r || s, 2 * c->scalar bytes. False,
 * with sig untouched, if d is not in [1, n-1]. */
bool ecdsa_sign_rfc6979(const struct ecdsa_curve *c, const uint8_t *d, const uint8_t *hv, uint8_t *sig);

#endif

/* SPDX-License-Identifier: ISC */
/*
 * EC keys for the token: NIST P-256 and P-384 (key generation and public
 * keys on BearSSL, ECDSA in services/common/ecdsa.c), and their PKCS#11 encodings
 * (CKA_EC_PARAMS: the curve's DER OID; CKA_EC_POINT: a DER OCTET STRING
 * around the uncompressed point). No I/O; callers wipe what they keep.
 */
#ifndef P11_EC_H
#define P11_EC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <bearssl/bearssl_hash.h>
#include <bearssl/bearssl_rand.h>

struct ecdsa_curve;

#define P11_EC_SCALAR_MAX 48
#define P11_EC_POINT_MAX (1 + 2 * P11_EC_SCALAR_MAX)
#define P11_EC_POINT_DER_MAX (2 + P11_EC_POINT_MAX)
#define P11_EC_SIG_MAX (2 * P11_EC_SCALAR_MAX)

struct p11_curve {
	int id;		      /* BearSSL's curve id */
	unsigned bits;	      /* of the order: 256 or 384 */
	size_t scalar;	      /* bytes of a private scalar, and of r and of s */
	const uint8_t *oid;   /* CKA_EC_PARAMS */
	size_t oid_len;
	const struct ecdsa_curve *ecdsa; /* its order and signatures (ecdsa.h) */
};

/* A key object's curve (its CKA_EC_PARAMS), or NULL (p11_keys.c). */
struct p11_object;
const struct p11_curve *p11_curve_of(const struct p11_object *o);

/* The curve a CKA_EC_PARAMS value names, or NULL (not one we support). */
const struct p11_curve *p11_ec_curve(const uint8_t *params, size_t len);

/* A private value (big-endian, up to scalar bytes, leading zeros may be
 * missing) as exactly c->scalar bytes in d; false if not in [1, n-1]. */
bool p11_ec_scalar(const struct p11_curve *c, const uint8_t *v, size_t len, uint8_t *d);

/* A new key pair: d (c->scalar bytes) and its CKA_EC_POINT (length
 * returned, 0 on failure). */
size_t p11_ec_keygen(const struct p11_curve *c, const br_prng_class **rng, uint8_t *d,
		     uint8_t point_der[P11_EC_POINT_DER_MAX]);

/* CKA_EC_POINT of the private key d: its length, or 0. */
size_t p11_ec_public(const struct p11_curve *c, const uint8_t *d, uint8_t point_der[P11_EC_POINT_DER_MAX]);

/* CKM_ECDSA: signs the hash value h (any length; as FIPS 186-4 reads a
 * longer one: its leftmost bits) with d; writes r || s (2 * c->scalar
 * bytes) to sig: with RFC 6979's nonce, the same signature as BearSSL's
 * br_ecdsa_i31_sign_raw. False if d is not in [1, n-1]. */
bool p11_ec_sign(const struct p11_curve *c, const uint8_t *d, const uint8_t *h, size_t hlen,
		 uint8_t sig[P11_EC_SIG_MAX]);

#endif

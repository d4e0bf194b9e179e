/* SPDX-License-Identifier: ISC */
/*
 * A private key as PKCS#11 wraps it: PKCS#8's PrivateKeyInfo (RFC 5208),
 * DER, holding an RFC 5915 ECPrivateKey (P-256, P-384: the scalar at the
 * curve's length and the public point) or an RFC 8017 RSAPrivateKey (its
 * nine integers). The DER is written and read with Mbed TLS's ASN.1
 * functions (asn1write, asn1parse), which bound every length by their
 * input; the token writes no DER parser of its own. The caller encrypts
 * and wipes what it gets.
 */
#ifndef P11_PKCS8_H
#define P11_PKCS8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "p11_ec.h"
#include "p11_objects.h"
#include "p11_rsa.h"

/* The longest PrivateKeyInfo the token writes or reads (an RSA-4096 key
 * with room to spare). */
#define P11_PKCS8_MAX 3072

/* A parsed key: views into the DER it was read from. */
struct p11_pkcs8 {
	CK_KEY_TYPE type; /* CKK_EC or CKK_RSA */
	const struct p11_curve *curve;
	const uint8_t *d; /* EC: the scalar as written (up to the curve's length) */
	size_t dlen;
	struct p11_rsa_key rsa; /* RSA: all eight parts */
};

/* The PrivateKeyInfo of private key object k (EC or RSA) into out (cap
 * bytes, P11_PKCS8_MAX is enough): its length, or 0. */
size_t p11_pkcs8_write(const struct p11_object *k, uint8_t *out, size_t cap);
/* Parses a PrivateKeyInfo of an EC key on a curve the token knows or of
 * an RSA key; false if it is anything else, or malformed, or followed by
 * bytes. */
bool p11_pkcs8_read(const uint8_t *der, size_t len, struct p11_pkcs8 *k);

#endif

/* SPDX-License-Identifier: ISC */
/*
 * RSA keys for the token: key generation, key checks, OAEP and PKCS#1
 * v1.5 decryption, encryption and verification on Mbed TLS (Debian's
 * BearSSL 0.6 has no PSS, and TLS 1.3 with an RSA key needs it); private
 * keys' signatures, PKCS#1 v1.5 and PSS, encoded by Nettle, on OpenSSL's
 * root where the guest may run OpenSSL (p11_ossl.h: where CPUID shows
 * SSSE3), else on Nettle's side-channel-silent root (GMP's mpn_sec
 * functions), which signs faster than Mbed TLS's (docs/pkcs11.md, its
 * benchmark); either checked with the public key. Except PKCS#1 v1.5
 * with SHA-384, which Nettle 3.8 lacks: Mbed TLS's.
 *
 * A key is the PKCS#11 attributes' big-endian values, viewed in place
 * (struct p11_rsa_key): a private key's eight parts, or a public key's
 * first two. Every call builds Mbed TLS's context or Nettle's keys from
 * them and frees them again (Mbed TLS zeroes its integers when it frees
 * them; for Nettle, p11_rsa.c's allocator does). No I/O.
 */
#ifndef P11_RSA_H
#define P11_RSA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <bearssl/bearssl_rand.h>

#include "p11_objects.h"
#include "p11_wire.h"

#define P11_RSA_BITS_MIN 2048
#define P11_RSA_BITS_MAX 4096
#define P11_RSA_BYTES_MAX (P11_RSA_BITS_MAX / 8)
#define P11_RSA_E 65537 /* the only public exponent key generation uses */

/* The parts of a key, in the order of p11_rsa_attr[]. */
enum { P11_RSA_N, P11_RSA_PUBEXP, P11_RSA_D, P11_RSA_P, P11_RSA_Q, P11_RSA_DP, P11_RSA_DQ, P11_RSA_QINV,
       P11_RSA_PARTS };
#define P11_RSA_PUB_PARTS 2
/* Room for all parts of a key of P11_RSA_BITS_MAX bits. */
#define P11_RSA_BUF (2 * P11_RSA_BYTES_MAX + 8 + 5 * (P11_RSA_BYTES_MAX / 2 + 1))

/* CKA_MODULUS, CKA_PUBLIC_EXPONENT, CKA_PRIVATE_EXPONENT, CKA_PRIME_1, ... */
extern const uint64_t p11_rsa_attr[P11_RSA_PARTS];

struct p11_rsa_key {
	const uint8_t *v[P11_RSA_PARTS]; /* NULL: absent */
	size_t len[P11_RSA_PARTS];
};

/* An RSA key object's parts, viewed in place (absent ones NULL). */
void p11_rsa_view(const struct p11_object *o, struct p11_rsa_key *k);

/* True if type is one of a private key's secret parts (d, primes,
 * exponents, coefficient). */
bool p11_rsa_secret_attr(uint64_t type);

/* A new key pair of bits bits (P11_RSA_BITS_MIN..MAX, a multiple of 8)
 * with e = 65537: k's parts point into buf (P11_RSA_BUF bytes, which the
 * caller wipes). */
bool p11_rsa_keygen(br_hmac_drbg_context *drbg, unsigned bits, uint8_t *buf, struct p11_rsa_key *k);

/* Checks an imported key and writes it whole (all parts, minimal
 * lengths) to out's views in buf: a private key needs n, e and d or the
 * primes (Mbed TLS completes the rest), and must be consistent; a public
 * key needs n and e. The size of n in bits, or 0 (invalid, or a size
 * out of range). */
unsigned p11_rsa_import(const struct p11_rsa_key *in, bool priv, uint8_t *buf, struct p11_rsa_key *out);

/* Bits of the modulus of a key as stored. */
unsigned p11_rsa_bits(const struct p11_rsa_key *k);

/* The hash mechanisms PSS and OAEP parameters name (CKM_SHA_1,
 * CKM_SHA256, CKM_SHA384, CKM_SHA512): their output length, or 0. */
size_t p11_rsa_hash_len(CK_MECHANISM_TYPE hash);
/* CKG_MGF1_* of that hash, or 0. */
CK_RSA_PKCS_MGF_TYPE p11_rsa_mgf1(CK_MECHANISM_TYPE hash);

/* PKCS#1 v1.5 signature: with hash 0 (CKM_RSA_PKCS), of in as the
 * encoded DigestInfo; else of in as that hash's value. sig gets
 * (bits + 7) / 8 bytes. */
bool p11_rsa_sign_pkcs1(const struct p11_rsa_key *k, br_hmac_drbg_context *drbg, CK_MECHANISM_TYPE hash,
			const uint8_t *in, size_t len, uint8_t *sig);
/* PSS signature of the hash value h (of hash, MGF1 of the same hash)
 * with a salt of salt bytes. */
bool p11_rsa_sign_pss(const struct p11_rsa_key *k, br_hmac_drbg_context *drbg, CK_MECHANISM_TYPE hash,
		      size_t salt, const uint8_t *h, size_t hlen, uint8_t *sig);
/* The longest PSS salt the key allows with this hash. */
size_t p11_rsa_pss_salt_max(const struct p11_rsa_key *k, CK_MECHANISM_TYPE hash);

/* Verification with a public key (n and e) of a signature as long as
 * the modulus: PKCS#1 v1.5 (hash 0: of in as the encoded DigestInfo)
 * and PSS with exactly salt bytes of salt. */
bool p11_rsa_verify_pkcs1(const struct p11_rsa_key *k, CK_MECHANISM_TYPE hash, const uint8_t *in, size_t len,
			  const uint8_t *sig);
bool p11_rsa_verify_pss(const struct p11_rsa_key *k, CK_MECHANISM_TYPE hash, size_t salt, const uint8_t *h,
			size_t hlen, const uint8_t *sig);

/* Encryption to a public key: OAEP (hash, MGF1 of the same hash,
 * label) or, with hash 0, PKCS#1 v1.5, of at most
 * p11_rsa_encrypt_max(k, hash) bytes; out gets (bits + 7) / 8. */
size_t p11_rsa_encrypt_max(const struct p11_rsa_key *k, CK_MECHANISM_TYPE hash);
bool p11_rsa_encrypt(const struct p11_rsa_key *k, br_hmac_drbg_context *drbg, CK_MECHANISM_TYPE hash,
		     const uint8_t *label, size_t label_len, const uint8_t *in, size_t len, uint8_t *out);

/* Decryption of in, which must be as long as n: OAEP (hash, MGF1 of
 * the same hash, label) or, with hash 0, PKCS#1 v1.5. The message's
 * length in *outlen (room for (bits + 7) / 8 bytes at out). False for any
 * failure, padding or not, without saying which. */
bool p11_rsa_decrypt(const struct p11_rsa_key *k, br_hmac_drbg_context *drbg, CK_MECHANISM_TYPE hash,
		     const uint8_t *label, size_t label_len, const uint8_t *in, size_t len, uint8_t *out,
		     size_t *outlen);

#endif

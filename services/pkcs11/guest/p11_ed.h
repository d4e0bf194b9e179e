/* SPDX-License-Identifier: ISC */
/*
 * Ed25519 keys for the token (CKK_EC_EDWARDS, CKM_EC_EDWARDS_KEY_PAIR_GEN,
 * CKM_EDDSA: pure Ed25519, RFC 8032), on libsodium's crypto_sign_ed25519
 * (Debian's libsodium.a, which the guests already link; its
 * documentation says its Ed25519 runs in constant time), as the
 * ssh-agent's keys. Their PKCS#11 forms: CKA_EC_PARAMS names the curve,
 * as the OID 1.3.101.112 (RFC 8410) or as the PrintableString
 * "edwards25519" (PKCS#11 3.0; what pkcs11-tool 0.23 sends); CKA_VALUE
 * is the 32-byte seed (RFC 8410's private key); CKA_EC_POINT is the
 * 32-byte public key in a DER OCTET STRING, as SoftHSM2 and OpenSC have
 * it. No I/O; callers wipe what they keep.
 *
 * Debian's build of libsodium does Ed25519's field and group arithmetic
 * and its SHA-512 with SSE2 instructions (as the store's Argon2id and
 * XChaCha20), so Ed25519 runs where the CPU runs guest code, not where
 * KVM emulates it.
 */
#ifndef P11_ED_H
#define P11_ED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "p11_objects.h"

#define P11_ED_KEY 32
#define P11_ED_SIG 64
#define P11_ED_POINT_DER (2 + P11_ED_KEY)

/* Whether a CKA_EC_PARAMS value names Ed25519, and whether key object o
 * is an Ed25519 key (its CKA_EC_PARAMS). */
bool p11_ed_params(const uint8_t *p, size_t len);
bool p11_ed_key(const struct p11_object *o);

/* The public key of a seed, as CKA_EC_POINT. */
void p11_ed_public(const uint8_t seed[P11_ED_KEY], uint8_t point_der[P11_ED_POINT_DER]);
/* The public key in a CKA_EC_POINT value, or NULL (malformed). */
const uint8_t *p11_ed_point(const uint8_t *v, size_t len);

/* Pure Ed25519 of msg with key object k's seed; false if k holds none. */
bool p11_ed_sign(const struct p11_object *k, const uint8_t *msg, size_t len, uint8_t sig[P11_ED_SIG]);
/* Whether sig is public key object k's signature of msg. */
bool p11_ed_verify(const struct p11_object *k, const uint8_t *msg, size_t len, const uint8_t sig[P11_ED_SIG]);

#endif

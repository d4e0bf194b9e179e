/* SPDX-License-Identifier: ISC */
/*
 * The token's signatures on OpenSSL 3.0's libcrypto (Debian's static
 * archive in the guest, through services/common/openssl_shim.c; the
 * shared library on the host): ECDSA on P-256 (ecp_nistz256) and P-384,
 * and RSA's private operation (Montgomery, CRT, blinded). It signs about
 * twice as fast as Nettle in the guest (a proof of concept in the
 * reference VM: P-256 349 us against 670 us, RSA-2048 6.9 ms against
 * 12.4 ms), but its x86-64 assembly uses SSE2 and SSSE3 unconditionally,
 * and where KVM emulates guest code SSE ends the guest. The monitor shows
 * SSSE3 to a guest only where KVM runs guest code on the CPU
 * (monitor/x86/cpu.c, native_ext), so the guest uses OpenSSL only where
 * CPUID shows SSSE3, and Nettle (services/common/ecdsa.c, p11_rsa.c)
 * elsewhere: p11_ossl_ready() says which. P-384 signs on Nettle
 * everywhere (p11_ec_sign: OpenSSL 3.0's generic code is slower there);
 * p11_ossl_ecdsa_sign has it for the tests and for a later choice.
 *
 * OpenSSL's random bytes (ECDSA's nonces, RSA's blinding) come from a
 * legacy RAND_METHOD on BearSSL's HMAC-DRBG, seeded once from the token's
 * entropy (entropy.c's entropy_seed in the guest, getrandom on the host).
 * Each curve's group (no secret in it) is built once.
 * The last EC key's and the last RSA key's OpenSSL objects are kept for
 * their next signatures, until another key of their kind signs or any
 * token object is freed (p11_ossl_forget), and freed with clearing; in
 * the guest every block OpenSSL frees is wiped.
 */
#ifndef P11_OSSL_H
#define P11_OSSL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct p11_curve;
struct p11_rsa_key;

/* Whether CPUID leaf 1's ecx shows SSSE3 (bit 9): what the guest asks
 * before it runs any OpenSSL code. */
bool p11_ossl_cpu_ok(uint32_t leaf1_ecx);

/* True if signatures go to OpenSSL: in the guest, CPUID shows SSSE3 and
 * OpenSSL initialised (once, at the first call; CPUID is asked once); on
 * the host, always, unless a test forced the portable path. */
bool p11_ossl_ready(void);

/* "openssl" or "nettle", as the guest's ready line says. */
const char *p11_ossl_sign_impl(void);

/* Tests only: true makes p11_ossl_ready() false from now on (the
 * portable Nettle path), false gives the CPU's choice back. */
void p11_ossl_force_portable(bool on);

/* ECDSA with the private scalar d (c->scalar bytes, in [1, n-1]) over
 * hv, the hash as an integer of c->scalar bytes (p11_ec_sign's hv): r || s,
 * 2 * c->scalar bytes, at sig. A random nonce (OpenSSL's, from the key,
 * the hash and the DRBG). The key's OpenSSL object is kept for its next
 * signature. Only after p11_ossl_ready(). */
bool p11_ossl_ecdsa_sign(const struct p11_curve *c, const uint8_t *d, const uint8_t *hv, uint8_t *sig);

/* RSA's private operation on the encoded block em (len bytes, the
 * modulus's length, em < n) with the stored key k (all eight parts):
 * len bytes at out. No padding and no check here: the caller checks the
 * result with the public key (p11_rsa.c). The key's OpenSSL object is
 * kept for its next signature (p11_ossl.c). Only after p11_ossl_ready(). */
bool p11_ossl_rsa_private(const struct p11_rsa_key *k, const uint8_t *em, size_t len, uint8_t *out);

/* Drops the kept EC and RSA objects (the last keys signed with),
 * clearing them: p11_objects_free calls it for every object it frees. */
void p11_ossl_forget(void);

/* Tests only: how many EC groups were built (at most one a curve). */
unsigned p11_ossl_groups_built(void);

/* Tests only: whether an RSA object, an EC object is kept. */
bool p11_ossl_rsa_kept(void);
bool p11_ossl_ec_kept(void);

#endif

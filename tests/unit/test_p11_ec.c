/* SPDX-License-Identifier: ISC */
/*
 * The token's ECDSA (services/pkcs11/guest/p11_ec.c, services/common/ecdsa.c)
 * signs on Nettle with RFC
 * 6979 nonces made from BearSSL's HMAC_DRBG. RFC 6979 makes a signature
 * a function of the key and the hash alone, so the token's signature must
 * equal, byte for byte, what BearSSL's own RFC 6979 signer
 * (br_ecdsa_i31_sign_raw) gives: that checks the nonce, the limb
 * conversions and the hash's truncation and reduction at once. Each
 * signature also verifies with BearSSL and, changed, fails to.
 *
 * Where the guest may run OpenSSL (p11_ossl.h; on the host, always),
 * P-256 signs on OpenSSL instead, with random nonces: those tests force
 * the portable path (p11_ossl_force_portable), and the OpenSSL path has
 * its own, for both curves, checked by BearSSL's verification.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <bearssl.h>
#include <gmp.h>

#include "ecdsa.h"
#include "p11_ec.h"
#include "p11_ossl.h"

static const uint8_t oid_p256[] = { 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07 };
static const uint8_t oid_p384[] = { 0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22 };

/* Deterministic test bytes: an HMAC_DRBG seeded with a label. */
static void fill(br_hmac_drbg_context *rng, uint8_t *p, size_t n)
{
	br_hmac_drbg_generate(rng, p, n);
}

/* BearSSL's signature over the hash as p11_ec_sign reads it: of the
 * order's length, left-padded or truncated to its leftmost bytes. */
static size_t bearssl_sign(const struct p11_curve *c, const uint8_t *d, const uint8_t *h, size_t hlen,
			   uint8_t *sig)
{
	uint8_t hv[P11_EC_SCALAR_MAX] = { 0 };
	size_t take = hlen < c->scalar ? hlen : c->scalar;
	memcpy(hv + c->scalar - take, h, take);
	br_ec_private_key sk = { c->id, (unsigned char *)d, c->scalar };
	return br_ecdsa_i31_sign_raw(&br_ec_all_m31, c->ecdsa->hash, hv, &sk, sig);
}

static void check_one(const struct p11_curve *c, const uint8_t *d, const uint8_t *h, size_t hlen)
{
	uint8_t got[P11_EC_SIG_MAX], want[P11_EC_SIG_MAX], pt[P11_EC_POINT_DER_MAX];
	assert_true(p11_ec_sign(c, d, h, hlen, got));
	assert_int_equal(bearssl_sign(c, d, h, hlen, want), 2 * c->scalar);
	assert_memory_equal(got, want, 2 * c->scalar);
	size_t plen = p11_ec_public(c, d, pt);
	assert_int_not_equal(plen, 0);
	br_ec_public_key pk = { c->id, pt + 2, plen - 2 };
	size_t vlen = hlen < 64 ? hlen : 64;
	assert_int_equal(br_ecdsa_i31_vrfy_raw(&br_ec_all_m31, h, vlen, &pk, got, 2 * c->scalar), 1);
	got[c->scalar + 3] ^= 0x10;
	assert_int_equal(br_ecdsa_i31_vrfy_raw(&br_ec_all_m31, h, vlen, &pk, got, 2 * c->scalar), 0);
}

static void rfc6979_on(const uint8_t *oid, size_t oid_len)
{
	const struct p11_curve *c = p11_ec_curve(oid, oid_len);
	assert_non_null(c);
	br_hmac_drbg_context rng;
	br_hmac_drbg_init(&rng, &br_sha256_vtable, oid, oid_len);
	static const size_t hlens[] = { 1, 20, 32, 48, 64 };
	for (int i = 0; i < 40; i++) {
		uint8_t d[P11_EC_SCALAR_MAX], raw[P11_EC_SCALAR_MAX], h[64];
		do
			fill(&rng, raw, c->scalar);
		while (!p11_ec_scalar(c, raw, c->scalar, d));
		size_t hlen = hlens[i % 5];
		fill(&rng, h, hlen);
		check_one(c, d, h, hlen);
	}
	/* A hash above the order: RFC 6979 seeds with it reduced, while the
	 * signature itself uses it whole; and the smallest and largest keys. */
	uint8_t ones[64], d[P11_EC_SCALAR_MAX], v[P11_EC_SCALAR_MAX];
	memset(ones, 0xff, sizeof ones);
	fill(&rng, v, c->scalar);
	assert_true(p11_ec_scalar(c, v, c->scalar, d) || (v[0] = 0x7f, p11_ec_scalar(c, v, c->scalar, d)));
	check_one(c, d, ones, c->scalar);
	check_one(c, d, ones, sizeof ones);
	uint8_t one = 1;
	assert_true(p11_ec_scalar(c, &one, 1, d));
	check_one(c, d, ones, c->scalar);
	memset(v, 0xff, c->scalar);
	assert_false(p11_ec_scalar(c, v, c->scalar, d)); /* 2^k - 1 > n */
}

/* The RFC 6979 tests run on the portable path (Nettle). */
static int portable(void **state)
{
	(void)state;
	p11_ossl_force_portable(true);
	return 0;
}

static int cpu_path(void **state)
{
	(void)state;
	p11_ossl_force_portable(false);
	return 0;
}

static void test_p256_rfc6979(void **state)
{
	(void)state;
	rfc6979_on(oid_p256, sizeof oid_p256);
}

static void test_p384_rfc6979(void **state)
{
	(void)state;
	rfc6979_on(oid_p384, sizeof oid_p384);
}

/* sig verifies with BearSSL over hv (the hash as the signer read it),
 * and with a bit changed does not. */
static void verifies(const struct p11_curve *c, const uint8_t *d, const uint8_t *hv, uint8_t *sig)
{
	uint8_t pt[P11_EC_POINT_DER_MAX];
	size_t plen = p11_ec_public(c, d, pt);
	assert_int_not_equal(plen, 0);
	br_ec_public_key pk = { c->id, pt + 2, plen - 2 };
	assert_int_equal(br_ecdsa_i31_vrfy_raw(&br_ec_all_m31, hv, c->scalar, &pk, sig, 2 * c->scalar), 1);
	sig[c->scalar + 3] ^= 0x10;
	assert_int_equal(br_ecdsa_i31_vrfy_raw(&br_ec_all_m31, hv, c->scalar, &pk, sig, 2 * c->scalar), 0);
	sig[c->scalar + 3] ^= 0x10;
}

/* OpenSSL's ECDSA (p11_ossl_ecdsa_sign) on both curves: its signatures
 * verify with BearSSL, for random keys and hashes and the smallest key;
 * two of the same hash differ (OpenSSL's nonces are random). P-256
 * through p11_ec_sign, which takes OpenSSL's path for it here: the same
 * holds, which tells it from Nettle's RFC 6979 signature. Each curve's
 * group is built once, whatever the number of signatures. Each key signs
 * twice in a row (its kept object) after another key signed. */
static void openssl_on(const uint8_t *oid, size_t oid_len)
{
	const struct p11_curve *c = p11_ec_curve(oid, oid_len);
	assert_non_null(c);
	assert_true(p11_ossl_ready());
	br_hmac_drbg_context rng;
	br_hmac_drbg_init(&rng, &br_sha256_vtable, "openssl", 7);
	for (int i = 0; i < 20; i++) {
		uint8_t d[P11_EC_SCALAR_MAX], raw[P11_EC_SCALAR_MAX], hv[P11_EC_SCALAR_MAX];
		uint8_t a[P11_EC_SIG_MAX], b[P11_EC_SIG_MAX];
		do
			fill(&rng, raw, c->scalar);
		while (!p11_ec_scalar(c, raw, c->scalar, d));
		if (i == 0) {
			uint8_t one = 1;
			assert_true(p11_ec_scalar(c, &one, 1, d));
		}
		fill(&rng, hv, c->scalar);
		assert_true(p11_ossl_ecdsa_sign(c, d, hv, a));
		verifies(c, d, hv, a);
		assert_true(p11_ossl_ecdsa_sign(c, d, hv, b));
		verifies(c, d, hv, b);
		assert_memory_not_equal(a, b, 2 * c->scalar);
		if (c->bits == 256) {
			assert_true(p11_ec_sign(c, d, hv, c->scalar, a));
			verifies(c, d, hv, a);
			assert_true(p11_ec_sign(c, d, hv, c->scalar, b));
			assert_memory_not_equal(a, b, 2 * c->scalar);
		}
	}
	assert_in_range(p11_ossl_groups_built(), 1, 2);
	/* The last key's object is kept (each key above signed with its
	 * own: a kept object used for another key would have failed
	 * verifies), and dropped on request. */
	assert_true(p11_ossl_ec_kept());
	p11_ossl_forget();
	assert_false(p11_ossl_ec_kept());
}

static void test_p256_openssl(void **state)
{
	(void)state;
	openssl_on(oid_p256, sizeof oid_p256);
}

static void test_p384_openssl(void **state)
{
	(void)state;
	openssl_on(oid_p384, sizeof oid_p384);
}

/* The guest's choice: OpenSSL only where CPUID leaf 1 shows SSSE3
 * (bit 9), whatever else it shows. */
static void test_cpu_gate(void **state)
{
	(void)state;
	assert_false(p11_ossl_cpu_ok(0));
	assert_false(p11_ossl_cpu_ok(~(1u << 9)));
	assert_true(p11_ossl_cpu_ok(1u << 9));
	assert_true(p11_ossl_cpu_ok(0xffffffffu));
	/* The test hook: the portable path, whatever the CPU. */
	p11_ossl_force_portable(true);
	assert_false(p11_ossl_ready());
	p11_ossl_force_portable(false);
	assert_true(p11_ossl_ready());
}

/* GMP's allocations, counted: a signature must make none, so that no
 * temporary of it is left on a heap the guest does not wipe (GMP puts
 * small temporaries on the stack, which the guest wipes after each
 * request; Nettle works in the scratch p11_ec_sign gives it). */
static unsigned gmp_allocs;
static void *(*real_alloc)(size_t);
static void *(*real_realloc)(void *, size_t, size_t);
static void (*real_free)(void *, size_t);
static void *count_alloc(size_t n)
{
	gmp_allocs++;
	return real_alloc(n);
}
static void *count_realloc(void *p, size_t old, size_t n)
{
	gmp_allocs++;
	return real_realloc(p, old, n);
}

static void test_no_heap(void **state)
{
	(void)state;
	mp_get_memory_functions(&real_alloc, &real_realloc, &real_free);
	mp_set_memory_functions(count_alloc, count_realloc, real_free);
	mpz_t control;
	mpz_init_set_ui(control, 1);
	mpz_mul_2exp(control, control, 4096); /* the control: this allocates */
	unsigned after_control = gmp_allocs;
	mpz_clear(control);
	static const uint8_t *const oids[] = { oid_p256, oid_p384 };
	static const size_t lens[] = { sizeof oid_p256, sizeof oid_p384 };
	for (int i = 0; i < 2; i++) {
		const struct p11_curve *c = p11_ec_curve(oids[i], lens[i]);
		uint8_t d[P11_EC_SCALAR_MAX], v[P11_EC_SCALAR_MAX], h[64], sig[P11_EC_SIG_MAX];
		memset(v, 0x5a, sizeof v);
		memset(h, 0xc3, sizeof h);
		assert_true(p11_ec_scalar(c, v, c->scalar, d));
		assert_true(p11_ec_sign(c, d, h, sizeof h, sig));
	}
	unsigned during = gmp_allocs - after_control;
	mp_set_memory_functions(real_alloc, real_realloc, real_free);
	assert_int_not_equal(after_control, 0);
	assert_int_equal(during, 0);
}

/* A private value out of [1, n-1] is refused, and sig is left alone
 * (run on both paths). */
static void test_bad_key(void **state)
{
	(void)state;
	static const uint8_t *const oids[] = { oid_p256, oid_p384 };
	static const size_t lens[] = { sizeof oid_p256, sizeof oid_p384 };
	for (int i = 0; i < 2; i++) {
		const struct p11_curve *c = p11_ec_curve(oids[i], lens[i]);
		uint8_t d[P11_EC_SCALAR_MAX] = { 0 }, h[32] = { 1 }, sig[P11_EC_SIG_MAX];
		memset(sig, 0xa5, sizeof sig);
		assert_false(p11_ec_sign(c, d, h, sizeof h, sig));
		memset(d, 0xff, c->scalar);
		assert_false(p11_ec_sign(c, d, h, sizeof h, sig));
		for (size_t j = 0; j < sizeof sig; j++)
			assert_int_equal(sig[j], 0xa5);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_p256_rfc6979, portable, cpu_path),
		cmocka_unit_test_setup_teardown(test_p384_rfc6979, portable, cpu_path),
		cmocka_unit_test(test_p256_openssl),
		cmocka_unit_test(test_p384_openssl),
		cmocka_unit_test(test_cpu_gate),
		cmocka_unit_test(test_bad_key),
		{ "test_bad_key (nettle)", test_bad_key, portable, cpu_path, NULL },
		cmocka_unit_test_setup_teardown(test_no_heap, portable, cpu_path),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

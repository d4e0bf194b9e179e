/* SPDX-License-Identifier: ISC */
/* ECDSA on Nettle with RFC 6979 nonces: see ecdsa.h. */
#include "ecdsa.h"

#include <string.h>

#include <bearssl/bearssl_rand.h>
#include <nettle/ecc-curve.h>
#include <nettle/ecc.h>
#include <nettle/ecdsa.h>

#include "wipe.h"

/* Nettle's limbs: 64 bits, least significant first. */
_Static_assert(sizeof(mp_limb_t) == 8, "64-bit GMP limbs");
#define LIMBS_MAX (ECDSA_SCALAR_MAX / 8)
/* ecc_ecdsa_sign_itch is 9 limbs a limb of n in Nettle 3.8 (54 for
 * P-384); ecdsa_sign_rfc6979 refuses a library that asks for more than this. */
#define SCRATCH_MAX 128

static const uint8_t order_p256[32] = {
	0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17, 0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51,
};
static const uint8_t order_p384[48] = {
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xc7, 0x63, 0x4d, 0x81, 0xf4, 0x37, 0x2d, 0xdf,
	0x58, 0x1a, 0x0d, 0xb2, 0x48, 0xb0, 0xa7, 0x7a, 0xec, 0xec, 0x19, 0x6a, 0xcc, 0xc5, 0x29, 0x73,
};

const struct ecdsa_curve ecdsa_p256 = { 32, order_p256, &br_sha256_vtable, nettle_get_secp_256r1 };
const struct ecdsa_curve ecdsa_p384 = { 48, order_p384, &br_sha384_vtable, nettle_get_secp_384r1 };

/* v - n byte by byte from the least significant end, into t; the final
 * borrow (1: v < n). No branch depends on v. */
static unsigned sub_order(const struct ecdsa_curve *c, const uint8_t *v, uint8_t *t)
{
	unsigned borrow = 0;
	for (size_t i = c->scalar; i-- > 0;) {
		unsigned d = (unsigned)v[i] - c->order[i] - borrow;
		t[i] = (uint8_t)d;
		borrow = (d >> 8) & 1;
	}
	return borrow;
}

bool ecdsa_scalar_ok(const struct ecdsa_curve *c, const uint8_t *d)
{
	uint8_t t[ECDSA_SCALAR_MAX];
	unsigned any = 0;
	for (size_t i = 0; i < c->scalar; i++)
		any |= d[i];
	unsigned below_n = sub_order(c, d, t);
	wipe(t, sizeof t);
	return (below_n & ((any + 0xff) >> 8)) != 0;
}

/* v mod n for v of n's length: v < 2n on both curves, so one
 * subtraction, chosen by mask, not by branch. */
static void mod_order(const struct ecdsa_curve *c, const uint8_t *v, uint8_t *out)
{
	uint8_t t[ECDSA_SCALAR_MAX];
	uint8_t keep_v = (uint8_t)-sub_order(c, v, t); /* borrow: v < n */
	for (size_t i = 0; i < c->scalar; i++)
		out[i] = (uint8_t)((v[i] & keep_v) | (t[i] & ~keep_v));
	wipe(t, sizeof t);
}

/* Big-endian bytes (a multiple of 8 of them) to limbs and back. */
static void to_limbs(const uint8_t *b, size_t len, mp_limb_t *l)
{
	for (size_t i = 0; i < len / 8; i++) {
		mp_limb_t v = 0;
		for (size_t j = 0; j < 8; j++)
			v = v << 8 | b[len - 8 * i - 8 + j];
		l[i] = v;
	}
}

static void from_limbs(const mp_limb_t *l, size_t len, uint8_t *b)
{
	for (size_t i = 0; i < len / 8; i++)
		for (size_t j = 0; j < 8; j++)
			b[len - 8 * i - 1 - j] = (uint8_t)(l[i] >> (8 * j));
}

/* RFC 6979's k for the private key d and the reduced hash m: an
 * HMAC_DRBG on the curve's hash seeded with d || m, drawn from until a
 * value lies in [1, n-1] (both orders are whole bytes, so bits2int is
 * the identity). */
static void rfc6979_k(const struct ecdsa_curve *c, const uint8_t *d, const uint8_t *m, uint8_t *k)
{
	uint8_t seed[2 * ECDSA_SCALAR_MAX];
	br_hmac_drbg_context drbg;
	memcpy(seed, d, c->scalar);
	memcpy(seed + c->scalar, m, c->scalar);
	br_hmac_drbg_init(&drbg, c->hash, seed, 2 * c->scalar);
	do
		br_hmac_drbg_generate(&drbg, k, c->scalar);
	while (!ecdsa_scalar_ok(c, k));
	wipe(seed, sizeof seed);
	wipe(&drbg, sizeof drbg);
}

bool ecdsa_sign_rfc6979(const struct ecdsa_curve *c, const uint8_t *d, const uint8_t *hv, uint8_t *sig)
{
	const struct ecc_curve *ec = c->nettle();
	if ((size_t)ecc_size(ec) * 8 != c->scalar || (size_t)ecc_ecdsa_sign_itch(ec) > SCRATCH_MAX ||
	    !ecdsa_scalar_ok(c, d))
		return false;
	uint8_t m[ECDSA_SCALAR_MAX], k[ECDSA_SCALAR_MAX];
	mp_limb_t zp[LIMBS_MAX], kp[LIMBS_MAX], rp[LIMBS_MAX], sp[LIMBS_MAX], scratch[SCRATCH_MAX];
	mod_order(c, hv, m);
	rfc6979_k(c, d, m, k);
	to_limbs(d, c->scalar, zp);
	to_limbs(k, c->scalar, kp);
	ecc_ecdsa_sign(ec, zp, kp, c->scalar, hv, rp, sp, scratch);
	from_limbs(rp, c->scalar, sig);
	from_limbs(sp, c->scalar, sig + c->scalar);
	wipe(m, sizeof m);
	wipe(k, sizeof k);
	wipe(zp, sizeof zp);
	wipe(kp, sizeof kp);
	wipe(scratch, sizeof scratch);
	return true;
}

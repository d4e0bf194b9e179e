/* SPDX-License-Identifier: ISC */
/* EC keys on BearSSL and ECDSA on Nettle: see p11_ec.h. */
#include "p11_ec.h"

#include <string.h>

#include <bearssl/bearssl_ec.h>
#include <nettle/ecc-curve.h>
#include <nettle/ecc.h>
#include <nettle/ecdsa.h>

#include "../ssh-agent/agent_wipe.h"

/* Key generation and public points: BearSSL's br_ec_all_m31 (P-256 on
 * its constant-time m31 code, P-384 on i31). Signatures: Nettle's
 * side-channel-silent ECC on GMP's assembly, about 8x faster here than
 * m31 (Debian's BearSSL has no 64-bit m62/m64 code), with RFC 6979
 * nonces made below from BearSSL's HMAC_DRBG. */
#define EC (&br_ec_all_m31)

/* Nettle's limbs: 64 bits, least significant first. */
_Static_assert(sizeof(mp_limb_t) == 8, "64-bit GMP limbs");
#define LIMBS_MAX (P11_EC_SCALAR_MAX / 8)
/* ecc_ecdsa_sign_itch is 9 * 6 limbs for P-384 in Nettle 3.8; the call
 * refuses a library that asks for more. */
#define SCRATCH_MAX 128

static const uint8_t oid_p256[] = { 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07 };
static const uint8_t oid_p384[] = { 0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22 };

/* The group orders, big-endian. */
static const uint8_t order_p256[32] = {
	0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17, 0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51,
};
static const uint8_t order_p384[48] = {
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xc7, 0x63, 0x4d, 0x81, 0xf4, 0x37, 0x2d, 0xdf,
	0x58, 0x1a, 0x0d, 0xb2, 0x48, 0xb0, 0xa7, 0x7a, 0xec, 0xec, 0x19, 0x6a, 0xcc, 0xc5, 0x29, 0x73,
};

static const struct p11_curve curves[] = {
	{ BR_EC_secp256r1, 256, 32, oid_p256, sizeof oid_p256, &br_sha256_vtable, nettle_get_secp_256r1 },
	{ BR_EC_secp384r1, 384, 48, oid_p384, sizeof oid_p384, &br_sha384_vtable, nettle_get_secp_384r1 },
};

const struct p11_curve *p11_ec_curve(const uint8_t *params, size_t len)
{
	for (size_t i = 0; i < sizeof curves / sizeof curves[0]; i++)
		if (len == curves[i].oid_len && !memcmp(params, curves[i].oid, len))
			return &curves[i];
	return NULL;
}

static const uint8_t *order(const struct p11_curve *c)
{
	return c->bits == 256 ? order_p256 : order_p384;
}

bool p11_ec_scalar(const struct p11_curve *c, const uint8_t *v, size_t len, uint8_t *d)
{
	if (len > c->scalar)
		return false;
	memset(d, 0, c->scalar - len);
	memcpy(d + c->scalar - len, v, len);
	/* d - n byte by byte from the least significant end: a final borrow
	 * means d < n. No branch depends on d. */
	const uint8_t *n = order(c);
	unsigned borrow = 0, any = 0;
	for (size_t i = c->scalar; i-- > 0;) {
		unsigned t = (unsigned)d[i] - n[i] - borrow;
		borrow = (t >> 8) & 1;
		any |= d[i];
	}
	return (borrow & ((any + 0xff) >> 8)) != 0;
}

static size_t point_der(const uint8_t *point, size_t len, uint8_t out[P11_EC_POINT_DER_MAX])
{
	out[0] = 0x04; /* OCTET STRING; both lengths fit the short form */
	out[1] = (uint8_t)len;
	memcpy(out + 2, point, len);
	return 2 + len;
}

size_t p11_ec_public(const struct p11_curve *c, const uint8_t *d, uint8_t out[P11_EC_POINT_DER_MAX])
{
	br_ec_private_key sk = { c->id, (unsigned char *)d, c->scalar };
	br_ec_public_key pk;
	uint8_t point[P11_EC_POINT_MAX];
	size_t n = br_ec_compute_pub(EC, &pk, point, &sk);
	return n == 1 + 2 * c->scalar ? point_der(point, n, out) : 0;
}

size_t p11_ec_keygen(const struct p11_curve *c, const br_prng_class **rng, uint8_t *d,
		     uint8_t out[P11_EC_POINT_DER_MAX])
{
	uint8_t kbuf[BR_EC_KBUF_PRIV_MAX_SIZE];
	br_ec_private_key sk;
	size_t n = br_ec_keygen(rng, EC, &sk, kbuf, c->id), len = 0;
	if (n == c->scalar && p11_ec_scalar(c, kbuf, n, d))
		len = p11_ec_public(c, d, out);
	agent_wipe(kbuf, sizeof kbuf);
	if (!len)
		agent_wipe(d, c->scalar);
	return len;
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

/* v mod n for v of the order's length: v < 2n on both curves, so one
 * subtraction, chosen by mask, not by branch. */
static void mod_order(const struct p11_curve *c, const uint8_t *v, uint8_t *out)
{
	const uint8_t *n = order(c);
	uint8_t t[P11_EC_SCALAR_MAX];
	unsigned borrow = 0;
	for (size_t i = c->scalar; i-- > 0;) {
		unsigned d = (unsigned)v[i] - n[i] - borrow;
		t[i] = (uint8_t)d;
		borrow = (d >> 8) & 1;
	}
	uint8_t keep_v = (uint8_t)-borrow; /* borrow: v < n */
	for (size_t i = 0; i < c->scalar; i++)
		out[i] = (uint8_t)((v[i] & keep_v) | (t[i] & ~keep_v));
	agent_wipe(t, sizeof t);
}

/* RFC 6979's k for the private key d and the reduced hash m, from an
 * HMAC_DRBG on the curve's hash seeded with d || m (both orders are
 * whole bytes, so bits2int is the identity). */
static void rfc6979_k(const struct p11_curve *c, const uint8_t *d, const uint8_t *m, uint8_t *k)
{
	uint8_t seed[2 * P11_EC_SCALAR_MAX], cand[P11_EC_SCALAR_MAX];
	br_hmac_drbg_context drbg;
	memcpy(seed, d, c->scalar);
	memcpy(seed + c->scalar, m, c->scalar);
	br_hmac_drbg_init(&drbg, c->hash, seed, 2 * c->scalar);
	do
		br_hmac_drbg_generate(&drbg, cand, c->scalar);
	while (!p11_ec_scalar(c, cand, c->scalar, k));
	agent_wipe(seed, sizeof seed);
	agent_wipe(cand, sizeof cand);
	agent_wipe(&drbg, sizeof drbg);
}

bool p11_ec_sign(const struct p11_curve *c, const uint8_t *d, const uint8_t *h, size_t hlen,
		 uint8_t sig[P11_EC_SIG_MAX])
{
	const struct ecc_curve *ec = c->nettle();
	size_t limbs = c->scalar / 8;
	if ((size_t)ecc_size(ec) != limbs || (size_t)ecc_ecdsa_sign_itch(ec) > SCRATCH_MAX)
		return false;
	/* The hash as an integer of the order's length that is the same
	 * after FIPS 186-4's truncation (both orders are whole bytes). */
	uint8_t hv[P11_EC_SCALAR_MAX], x[P11_EC_SCALAR_MAX], m[P11_EC_SCALAR_MAX], k[P11_EC_SCALAR_MAX];
	size_t take = hlen < c->scalar ? hlen : c->scalar;
	memset(hv, 0, c->scalar - take);
	memcpy(hv + c->scalar - take, h, take);
	bool ok = p11_ec_scalar(c, d, c->scalar, x);
	mp_limb_t zp[LIMBS_MAX], kp[LIMBS_MAX], rp[LIMBS_MAX], sp[LIMBS_MAX], scratch[SCRATCH_MAX];
	if (ok) {
		mod_order(c, hv, m);
		rfc6979_k(c, x, m, k);
		to_limbs(x, c->scalar, zp);
		to_limbs(k, c->scalar, kp);
		ecc_ecdsa_sign(ec, zp, kp, c->scalar, hv, rp, sp, scratch);
		from_limbs(rp, c->scalar, sig);
		from_limbs(sp, c->scalar, sig + c->scalar);
	}
	agent_wipe(hv, sizeof hv);
	agent_wipe(x, sizeof x);
	agent_wipe(m, sizeof m);
	agent_wipe(k, sizeof k);
	agent_wipe(zp, sizeof zp);
	agent_wipe(kp, sizeof kp);
	agent_wipe(scratch, sizeof scratch);
	return ok;
}

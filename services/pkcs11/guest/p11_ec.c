/* SPDX-License-Identifier: ISC */
/* EC keys on BearSSL and ECDSA on Nettle: see p11_ec.h. */
#include "p11_ec.h"

#include <string.h>

#include <bearssl/bearssl_ec.h>

#include "ecdsa.h"
#include "p11_ossl.h"
#include "wipe.h"

/* Key generation and public points: BearSSL's br_ec_all_m31 (P-256 on
 * its constant-time m31 code, P-384 on i31). Signatures: ecdsa.c, or
 * OpenSSL for P-256 where the CPU runs its code (p11_ec_sign). */
#define EC (&br_ec_all_m31)

static const uint8_t oid_p256[] = { 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07 };
static const uint8_t oid_p384[] = { 0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22 };

static const struct p11_curve curves[] = {
	{ BR_EC_secp256r1, 256, 32, oid_p256, sizeof oid_p256, &ecdsa_p256 },
	{ BR_EC_secp384r1, 384, 48, oid_p384, sizeof oid_p384, &ecdsa_p384 },
};

const struct p11_curve *p11_ec_curve(const uint8_t *params, size_t len)
{
	for (size_t i = 0; i < sizeof curves / sizeof curves[0]; i++)
		if (len == curves[i].oid_len && !memcmp(params, curves[i].oid, len))
			return &curves[i];
	return NULL;
}

bool p11_ec_scalar(const struct p11_curve *c, const uint8_t *v, size_t len, uint8_t *d)
{
	if (len > c->scalar)
		return false;
	memmove(d + c->scalar - len, v, len);
	memset(d, 0, c->scalar - len);
	return ecdsa_scalar_ok(c->ecdsa, d);
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
	wipe(kbuf, sizeof kbuf);
	if (!len)
		wipe(d, c->scalar);
	return len;
}

bool p11_ec_sign(const struct p11_curve *c, const uint8_t *d, const uint8_t *h, size_t hlen,
		 uint8_t sig[P11_EC_SIG_MAX])
{
	/* The hash as an integer of the order's length that is the same
	 * after FIPS 186-4's truncation (both orders are whole bytes). */
	uint8_t hv[P11_EC_SCALAR_MAX];
	size_t take = hlen < c->scalar ? hlen : c->scalar;
	memset(hv, 0, c->scalar - take);
	memcpy(hv + c->scalar - take, h, take);
	/* P-256 on OpenSSL's ecp_nistz256 where the guest may run OpenSSL
	 * (p11_ossl.h): about twice Nettle's rate. P-384 stays on Nettle
	 * everywhere: OpenSSL 3.0 has no P-384 code of its own (its generic
	 * Montgomery code) and signs there about five times slower than
	 * Nettle (on the host: 718 us against 137 us). The key is checked
	 * first, as ecdsa.c does, so that both paths refuse the same keys. */
	bool ok;
	if (c->bits == 256 && p11_ossl_ready())
		ok = ecdsa_scalar_ok(c->ecdsa, d) && p11_ossl_ecdsa_sign(c, d, hv, sig);
	else
		ok = ecdsa_sign_rfc6979(c->ecdsa, d, hv, sig);
	wipe(hv, sizeof hv);
	return ok;
}

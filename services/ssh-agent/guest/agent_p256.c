/* SPDX-License-Identifier: ISC */
/* ECDSA P-256: keys on BearSSL, signatures in ../common/ecdsa.c; see agent_p256.h. */
#include "agent_p256.h"

#include <string.h>

#include <bearssl/bearssl_ec.h>
#include <bearssl/bearssl_hash.h>

#include "ecdsa.h"
#include "wipe.h"

#define EC (&br_ec_p256_m31)

bool p256_scalar_ok(const uint8_t d[AGENT_P256_SCALAR])
{
	return ecdsa_scalar_ok(&ecdsa_p256, d);
}

static void private_key(br_ec_private_key *sk, const uint8_t d[AGENT_P256_SCALAR])
{
	sk->curve = BR_EC_secp256r1;
	sk->x = (unsigned char *)d;
	sk->xlen = AGENT_P256_SCALAR;
}

bool p256_public(const uint8_t d[AGENT_P256_SCALAR], uint8_t point[AGENT_P256_POINT])
{
	if (!p256_scalar_ok(d))
		return false;
	br_ec_private_key sk;
	br_ec_public_key pk;
	private_key(&sk, d);
	return br_ec_compute_pub(EC, &pk, point, &sk) == AGENT_P256_POINT;
}

bool p256_sign(const uint8_t d[AGENT_P256_SCALAR], const void *data, size_t len, uint8_t rs[64])
{
	br_sha256_context c;
	uint8_t h[32];
	br_sha256_init(&c);
	br_sha256_update(&c, data, len);
	br_sha256_out(&c, h);
	return ecdsa_sign_rfc6979(&ecdsa_p256, d, h, rs);
}

bool p256_keygen(const br_prng_class **drbg, uint8_t d[AGENT_P256_SCALAR],
		 uint8_t point[AGENT_P256_POINT])
{
	uint8_t kbuf[BR_EC_KBUF_PRIV_MAX_SIZE];
	br_ec_private_key sk;
	size_t n = br_ec_keygen(drbg, EC, &sk, kbuf, BR_EC_secp256r1);
	bool ok = n == AGENT_P256_SCALAR && p256_public(kbuf, point);
	if (ok)
		memcpy(d, kbuf, AGENT_P256_SCALAR);
	wipe(kbuf, sizeof kbuf);
	return ok;
}

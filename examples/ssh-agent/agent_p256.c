/* SPDX-License-Identifier: ISC */
/* ECDSA P-256 on BearSSL: see agent_p256.h. */
#include "agent_p256.h"

#include <string.h>

#include <bearssl/bearssl_ec.h>
#include <bearssl/bearssl_hash.h>

#include "agent_wipe.h"

#define EC (&br_ec_p256_m31)

/* The order n of the P-256 group, big-endian. */
static const uint8_t order[AGENT_P256_SCALAR] = {
	0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17, 0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51,
};

bool p256_scalar_ok(const uint8_t d[AGENT_P256_SCALAR])
{
	/* d - n computed byte by byte from the least significant end: a
	 * final borrow means d < n. No branch depends on d. */
	unsigned borrow = 0, any = 0;
	for (int i = AGENT_P256_SCALAR - 1; i >= 0; i--) {
		unsigned t = (unsigned)d[i] - order[i] - borrow;
		borrow = (t >> 8) & 1;
		any |= d[i];
	}
	return (borrow & ((any + 0xff) >> 8)) != 0;
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
	br_ec_private_key sk;
	private_key(&sk, d);
	return br_ecdsa_i31_sign_raw(EC, &br_sha256_vtable, h, &sk, rs) == 64;
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
	agent_wipe(kbuf, sizeof kbuf);
	return ok;
}

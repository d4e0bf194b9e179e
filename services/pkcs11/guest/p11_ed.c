/* SPDX-License-Identifier: ISC */
/* Ed25519 on libsodium: see p11_ed.h. */
#include "p11_ed.h"

#include <string.h>

#include <sodium/crypto_sign_ed25519.h>

#include "wipe.h"

static const uint8_t ed_oid[5] = { 0x06, 0x03, 0x2b, 0x65, 0x70 };
static const uint8_t ed_name[14] = { 0x13, 0x0c, 'e', 'd', 'w', 'a', 'r', 'd', 's', '2', '5', '5', '1', '9' };

bool p11_ed_params(const uint8_t *p, size_t len)
{
	return (len == sizeof ed_oid && !memcmp(p, ed_oid, len)) ||
	       (len == sizeof ed_name && !memcmp(p, ed_name, len));
}

bool p11_ed_key(const struct p11_object *o)
{
	uint32_t len;
	const uint8_t *p = p11_obj_attr(o, CKA_EC_PARAMS, &len);
	return p && p11_ed_params(p, len);
}

void p11_ed_public(const uint8_t seed[P11_ED_KEY], uint8_t point_der[P11_ED_POINT_DER])
{
	uint8_t sk[crypto_sign_ed25519_SECRETKEYBYTES];
	point_der[0] = 0x04; /* OCTET STRING */
	point_der[1] = P11_ED_KEY;
	crypto_sign_ed25519_seed_keypair(point_der + 2, sk, seed);
	wipe(sk, sizeof sk);
}

const uint8_t *p11_ed_point(const uint8_t *v, size_t len)
{
	return len == P11_ED_POINT_DER && v[0] == 0x04 && v[1] == P11_ED_KEY ? v + 2 : NULL;
}

bool p11_ed_sign(const struct p11_object *k, const uint8_t *msg, size_t len, uint8_t sig[P11_ED_SIG])
{
	uint32_t slen;
	const uint8_t *seed = p11_obj_attr(k, CKA_VALUE, &slen);
	if (!seed || slen != P11_ED_KEY)
		return false;
	/* libsodium's secret key: its seed and the public key it gives. */
	uint8_t pk[crypto_sign_ed25519_PUBLICKEYBYTES], sk[crypto_sign_ed25519_SECRETKEYBYTES];
	crypto_sign_ed25519_seed_keypair(pk, sk, seed);
	bool ok = !crypto_sign_ed25519_detached(sig, NULL, msg, len, sk);
	wipe(sk, sizeof sk);
	return ok;
}

bool p11_ed_verify(const struct p11_object *k, const uint8_t *msg, size_t len, const uint8_t sig[P11_ED_SIG])
{
	uint32_t plen;
	const uint8_t *v = p11_obj_attr(k, CKA_EC_POINT, &plen);
	const uint8_t *pk = v ? p11_ed_point(v, plen) : NULL;
	return pk && !crypto_sign_ed25519_verify_detached(sig, msg, len, pk);
}

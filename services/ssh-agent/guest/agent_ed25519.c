/* SPDX-License-Identifier: ISC */
/* Ed25519 on libsodium: see agent_ed25519.h. libsodium's secret key is
 * seed || A; it lives on the stack only for the call, then is wiped. */
#include "agent_ed25519.h"

#include <string.h>

#include <sodium/crypto_sign_ed25519.h>

#include "wipe.h"

bool ed25519_public(const uint8_t seed[AGENT_ED25519_SEED], uint8_t pub[AGENT_ED25519_PUB])
{
	uint8_t sk[crypto_sign_ed25519_SECRETKEYBYTES];
	bool ok = crypto_sign_ed25519_seed_keypair(pub, sk, seed) == 0;
	wipe(sk, sizeof sk);
	return ok;
}

bool ed25519_sign(const uint8_t seed[AGENT_ED25519_SEED], const uint8_t pub[AGENT_ED25519_PUB],
		  const void *data, size_t len, uint8_t sig[64])
{
	uint8_t sk[crypto_sign_ed25519_SECRETKEYBYTES];
	memcpy(sk, seed, AGENT_ED25519_SEED);
	memcpy(sk + AGENT_ED25519_SEED, pub, AGENT_ED25519_PUB);
	bool ok = crypto_sign_ed25519_detached(sig, NULL, data, len, sk) == 0;
	wipe(sk, sizeof sk);
	return ok;
}

bool ed25519_keygen(const br_prng_class **drbg, uint8_t seed[AGENT_ED25519_SEED],
		    uint8_t pub[AGENT_ED25519_PUB])
{
	(*drbg)->generate(drbg, seed, AGENT_ED25519_SEED);
	return ed25519_public(seed, pub);
}

/* SPDX-License-Identifier: ISC */
/*
 * Ed25519 (RFC 8032) for the agent, on Debian's libsodium (its ref10
 * code). In the guest only the signing objects of libsodium.a are linked,
 * with the few helpers they call supplied by sodium_shim.c (no
 * sodium_init, no libc). Those objects were compiled with SSE2 integer
 * arithmetic (paddq, pxor, ...), which a CPU that runs guest code runs and
 * a KVM that emulates guest code cannot (docs/ssh-agent.md). Signing is
 * deterministic, so it needs no randomness.
 */
#ifndef AGENT_ED25519_H
#define AGENT_ED25519_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <bearssl/bearssl_rand.h>

#include "agent_wire.h"

/* The public key A of a seed. */
bool ed25519_public(const uint8_t seed[AGENT_ED25519_SEED], uint8_t pub[AGENT_ED25519_PUB]);
/* data signed with the key (seed, pub): R || S. pub must be seed's own. */
bool ed25519_sign(const uint8_t seed[AGENT_ED25519_SEED], const uint8_t pub[AGENT_ED25519_PUB],
		  const void *data, size_t len, uint8_t sig[64]);
/* A new key from drbg. */
bool ed25519_keygen(const br_prng_class **drbg, uint8_t seed[AGENT_ED25519_SEED],
		    uint8_t pub[AGENT_ED25519_PUB]);

#endif

/* SPDX-License-Identifier: ISC */
/*
 * ECDSA P-256 for the agent. Keys and public points on BearSSL with the
 * implementation picked by hand: br_ec_p256_m31 uses no SSE arithmetic,
 * which KVM on hosts that emulate guest code cannot run (the library's
 * defaults may pick one that does). Signatures on Nettle and GMP
 * (services/common/ecdsa.h), whose code for the baseline CPU the monitor
 * shows a guest runs there too (ssh_agent.bats signs on such a host).
 * Nonces are RFC 6979 deterministic, so signing needs no randomness.
 */
#ifndef AGENT_P256_H
#define AGENT_P256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <bearssl/bearssl_rand.h>

#include "agent_wire.h"

/* True if d (big-endian) is a valid private scalar: 1 <= d < n. Constant
 * time. */
bool p256_scalar_ok(const uint8_t d[AGENT_P256_SCALAR]);
/* The public point d*G; false if d is not a valid scalar. */
bool p256_public(const uint8_t d[AGENT_P256_SCALAR], uint8_t point[AGENT_P256_POINT]);
/* SHA-256 of data signed with d: r || s, 32 bytes each. */
bool p256_sign(const uint8_t d[AGENT_P256_SCALAR], const void *data, size_t len, uint8_t rs[64]);
/* A new key pair from drbg. */
bool p256_keygen(const br_prng_class **drbg, uint8_t d[AGENT_P256_SCALAR],
		 uint8_t point[AGENT_P256_POINT]);

#endif

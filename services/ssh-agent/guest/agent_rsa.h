/* SPDX-License-Identifier: ISC */
/*
 * RSA (PKCS#1 v1.5 signatures with SHA-256 or SHA-512: rsa-sha2-256 and
 * rsa-sha2-512) for the agent, on BearSSL's i31 code picked by name (the
 * library's defaults may pick the i62 code, whose modular exponentiation
 * has SSE arithmetic). A key is kept in the store's layout
 * (agent_wire.h): public e and n; secret p, q, dp, dq, iq, the CRT form
 * BearSSL signs with. Every key, imported or generated, is checked by
 * signing and verifying before it is accepted, and every signature is
 * verified before it leaves (a CRT fault would otherwise give p away).
 */
#ifndef AGENT_RSA_H
#define AGENT_RSA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <bearssl/bearssl_rand.h>

#include "agent_wire.h"

/* Bits of RSA keys made in the guest (OpenSSH's ssh-keygen default). */
#define AGENT_RSA_KEYGEN_BITS 3072

/* OpenSSH's n, e, d, iqmp, p, q to the store's layout: dp = d mod (p-1)
 * and dq = d mod (q-1) are computed, then the key must sign and verify.
 * False if the fields do not make a working key. */
bool rsa_import(const struct agent_rsa_fields *f, uint8_t secret[AGENT_RSA_SECRET],
		uint8_t pub[AGENT_RSA_PUB]);
/* data signed with SHA-512 (sha512) or SHA-256; *len gets the signature's
 * length (n's length in bytes). */
bool rsa_sign(const uint8_t secret[AGENT_RSA_SECRET], const uint8_t pub[AGENT_RSA_PUB],
	      bool sha512, const void *data, size_t data_len, uint8_t sig[AGENT_RSA_N_MAX],
	      size_t *len);
/* A new key of bits bits (AGENT_RSA_MIN_BITS..AGENT_RSA_MAX_BITS), e =
 * 65537, from drbg. */
bool rsa_keygen(const br_prng_class **drbg, unsigned bits, uint8_t secret[AGENT_RSA_SECRET],
		uint8_t pub[AGENT_RSA_PUB]);

#endif

/* SPDX-License-Identifier: ISC */
/*
 * The keyvault's request protocol on its channel, shared by the guest
 * (keyvault.c) and the host client (tools/cloak-keyvault.c).
 *
 * Request: one op byte, then for KV_OP_SIGN the 32-byte SHA-256 digest.
 * Response: status byte (KV_OK or KV_ERR_*), length byte, then `length`
 * bytes of payload:
 *   KV_OP_PUBKEY    65 bytes: the uncompressed P-256 point 04 || X || Y
 *   KV_OP_SIGN      ECDSA signature in ASN.1 DER (at most 72 bytes), as
 *                   `openssl dgst -sha256 -verify` reads it
 *   KV_OP_INFO      text: which entropy sources seeded the key, counters
 *   KV_OP_KEYHASH   32 bytes: SHA-256 of the private scalar (big-endian).
 *                   Only when the guest runs with --test-hooks: it lets a
 *                   test recognise the key's bytes without the key ever
 *                   leaving private memory (see docs/io.md).
 *   KV_OP_QUIT      empty; the guest then exits 0
 */
#ifndef KEYVAULT_PROTOCOL_H
#define KEYVAULT_PROTOCOL_H

#define KV_OP_PUBKEY 'P'
#define KV_OP_SIGN 'S'
#define KV_OP_INFO 'I'
#define KV_OP_KEYHASH 'H'
#define KV_OP_QUIT 'Q'

#define KV_OK 0
#define KV_ERR_UNKNOWN 1  /* unknown op, or a test hook without --test-hooks */
#define KV_ERR_CRYPTO 2   /* signing failed */

#define KV_DIGEST_LEN 32
#define KV_PUBKEY_LEN 65
#define KV_SIG_MAX 72

#endif

/* SPDX-License-Identifier: ISC */
/*
 * AES for the token: the modes of its encrypt and decrypt operations
 * (CKM_AES_ECB, _CBC, _CBC_PAD, _CTR, _GCM), key wrapping (RFC 3394's
 * CKM_AES_KEY_WRAP and RFC 5649's CKM_AES_KEY_WRAP_KWP) and CMAC. No
 * cryptographic primitive is written here:
 *
 *   - the block cipher is BearSSL's aes_x86ni (AES-NI) where CPUID names
 *     AES and SSE4.1 (the monitor shows them only where KVM runs guest
 *     code on the CPU), else its aes_ct (bitsliced; no SSE in Debian's
 *     build); both constant-time per BearSSL's documentation
 *     (bearssl.org/constanttime.html), named explicitly, never the
 *     library's default (which may pick its table-based AES);
 *   - GCM is BearSSL's br_gcm over that CTR and br_ghash_pclmul where
 *     CPUID names PCLMULQDQ, else br_ghash_ctmul64 (both constant-time per
 *     BearSSL; gcc vectorised a few of ctmul64's shifts and logic with SSE2
 *     integer instructions, so GCM runs only where the CPU runs guest
 *     code, as the store's libsodium does);
 *   - RFC 3394's wrapping function and CMAC are Nettle's
 *     (nist_keywrap16, cmac128) over that block function;
 *   - RFC 5649 (KWP) is Nettle's RFC 3394 function with RFC 5649's
 *     8-byte prefix (its length indicator) and zero padding, checked in
 *     constant time (a single block: one AES block operation).
 *
 * A struct p11_aes holds one multi-part operation: its subkeys, chaining
 * value or counter, the bytes it holds back, and (GCM decryption) the
 * ciphertext until the tag is checked. p11_aes_end wipes it. No I/O; the
 * token's handlers (p11_crypt.c, p11_mac.c, p11_wrap.c) check lengths
 * against what these functions report before they call them.
 */
#ifndef P11_AES_H
#define P11_AES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <bearssl/bearssl_aead.h>
#include <bearssl/bearssl_block.h>
#include <nettle/cmac.h>

#include "p11_wire.h"

#define P11_AES_BLOCK 16
/* CKM_AES_KEY_WRAP_KWP is PKCS#11 3.0's number, which p11-kit's header
 * lacks. SoftHSM2 gives RFC 5649 the number CKM_AES_KEY_WRAP_PAD
 * (0x210a), so the token takes both. */
#ifndef CKM_AES_KEY_WRAP_KWP
#define CKM_AES_KEY_WRAP_KWP 0x210bUL
#endif
/* The most ciphertext a GCM decryption holds until its tag is checked. */
#define P11_GCM_HELD_MAX (1024 * 1024)
/* A GCM parameter as it travels (the module flattens CK_GCM_PARAMS,
 * which holds pointers): u64 ivBits, u64 tagBits, bytes iv, bytes aad. */
#define P11_GCM_IV_MAX 256

/* The code in use, chosen at the first call that needs it (CPUID, an
 * exit in a guest, is asked once): "aes_x86ni" or "aes_ct", then
 * "ghash_pclmul" or "ghash_ctmul64", as the guest's ready line says. */
const char *p11_aes_impl(void);
/* Tests only: true makes the operations, wraps and MACs started from now
 * on use aes_ct and ghash_ctmul64 whatever the CPU offers (one started
 * before keeps its code); false goes back to the CPU's choice. */
void p11_aes_force_portable(bool on);

struct p11_aes {
	CK_MECHANISM_TYPE mech;
	bool encrypt;
	union { /* BearSSL's subkeys of any implementation, its class first */
		br_aes_gen_cbcenc_keys enc;
		br_aes_gen_cbcdec_keys dec;
		br_aes_gen_ctr_keys ctr;
	} k;
	br_gcm_context gcm;
	uint8_t iv[P11_AES_BLOCK];  /* CBC: the chaining value; CTR: the next counter block */
	uint8_t buf[P11_AES_BLOCK]; /* held back: a partial block, or (CBC_PAD decryption) the last one */
	uint32_t nbuf;
	uint8_t ks[P11_AES_BLOCK]; /* CTR: the current block's key stream */
	uint32_t ks_left;	   /* its bytes not used yet (at its end) */
	uint64_t ctr_blocks;	   /* CTR: blocks the counter may still take (UINT64_MAX: more than that) */
	uint32_t tag_len;	   /* GCM */
	uint8_t *held;		   /* GCM decryption: the ciphertext so far */
	size_t held_len, held_cap;
	size_t out_pos;		   /* GCM decryption's final output: bytes handed out */
	bool finishing;		   /* GCM decryption: tag checked, output being handed out */
};

/* Starts an operation with mech (one of the five modes) under an AES key
 * of klen bytes (16, 24, 32), with the mechanism's parameter as it
 * travels: none for ECB; a 16-byte IV for CBC and CBC_PAD;
 * CK_AES_CTR_PARAMS as the caller's structure for CTR; the flattened GCM
 * parameter. CKR_OK, CKR_MECHANISM_PARAM_INVALID, CKR_KEY_SIZE_RANGE or
 * CKR_MECHANISM_INVALID. */
CK_RV p11_aes_init(struct p11_aes *a, CK_MECHANISM_TYPE mech, bool encrypt, const uint8_t *key, size_t klen,
		   const uint8_t *param, size_t plen);
/* Whether mech is one of the five modes. */
bool p11_aes_mode(CK_MECHANISM_TYPE mech);

/* Output lengths, without changing the operation: of an update with len
 * more bytes in, and of the final call (for a decryption with padding,
 * the most it can be). */
size_t p11_aes_update_len(const struct p11_aes *a, size_t len);
size_t p11_aes_final_len(const struct p11_aes *a);
/* The output of a whole message of len bytes in one call, from the
 * start (for a decryption with padding, the most it can be). */
size_t p11_aes_oneshot_len(const struct p11_aes *a, size_t len);

/* An update: out (not in's buffer) gets p11_aes_update_len(a, len)
 * bytes (*outlen says how many). CKR_OK; CKR_DATA_LEN_RANGE (a CTR counter would wrap);
 * CKR_DEVICE_MEMORY (GCM decryption past P11_GCM_HELD_MAX). */
CK_RV p11_aes_update(struct p11_aes *a, const uint8_t *in, size_t len, uint8_t *out, size_t *outlen);
/* The final call: out gets at most p11_aes_final_len(a) bytes. CKR_OK;
 * CKR_DATA_LEN_RANGE / CKR_ENCRYPTED_DATA_LEN_RANGE (ECB, CBC: not whole
 * blocks); CKR_ENCRYPTED_DATA_INVALID (bad padding, or a GCM tag that does
 * not check; no byte of the message comes out). A GCM decryption hands
 * its message out in pieces of at most max bytes: *more is set while
 * bytes remain (call again). */
CK_RV p11_aes_final(struct p11_aes *a, uint8_t *out, size_t max, size_t *outlen, bool *more);
/* Wipes the operation (and frees what it held). */
void p11_aes_end(struct p11_aes *a);

/* Key wrapping of in (len bytes) under kek (klen bytes): RFC 3394
 * (pad false: len a multiple of 8, at least 16) or RFC 5649 (pad true:
 * len at least 1). The wrapped length, or 0 if len does not fit the
 * mechanism. out gets p11_aes_wrap_len(pad, len) bytes. */
size_t p11_aes_wrap_len(bool pad, size_t len);
size_t p11_aes_wrap(bool pad, const uint8_t *kek, size_t klen, const uint8_t *in, size_t len, uint8_t *out);
/* The reverse: the unwrapped length in *outlen (out has room for len - 8),
 * or false if the input does not unwrap (its integrity check or, RFC
 * 5649, its length or padding fails), without saying which, with out
 * wiped. */
bool p11_aes_unwrap(bool pad, const uint8_t *kek, size_t klen, const uint8_t *in, size_t len, uint8_t *out,
		    size_t *outlen);

/* CMAC (NIST SP 800-38B) with AES, 16-byte tags: Nettle's cmac128. */
struct p11_cmac {
	br_aes_gen_cbcenc_keys k;
	struct cmac128_key key;
	struct cmac128_ctx ctx;
};
bool p11_cmac_init(struct p11_cmac *m, const uint8_t *key, size_t klen);
void p11_cmac_update(struct p11_cmac *m, const uint8_t *in, size_t len);
void p11_cmac_out(struct p11_cmac *m, uint8_t tag[P11_AES_BLOCK]);

#endif

/* SPDX-License-Identifier: ISC */
/*
 * The PKCS#11 token's wire protocol, shared by the token guest
 * (services/pkcs11) and the host module (services/pkcs11/module). docs/pkcs11.md
 * describes it in full; in short:
 *
 *   frame   = u32 length (big-endian, 1..P11_BODY_MAX) || body
 *   request = u8 version || u8 op || 16-byte application id || arguments
 *   reply   = u8 version || u8 op || u64 CK_RV || results (only if CKR_OK,
 *             or for the few calls that return data with another CK_RV)
 *
 * Integers are big-endian u8/u32/u64; a byte string is u32 length || bytes
 * (services/common's codec, wire.h, reads and writes them).
 * Attribute values travel as PKCS#11 holds them in memory on x86-64
 * (CK_ULONG: 8 bytes little-endian, CK_BBOOL: 1 byte): both ends are
 * x86-64 processes built from the same header.
 *
 * The application id names one C_Initialize of one process: the module
 * draws it at random, the token keys its login state and sessions on it.
 * Nothing here allocates; the codec's readers never read past their
 * buffer and remember the first failure (bad), so a handler checks once
 * at the end.
 */
#ifndef P11_WIRE_H
#define P11_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CRYPTOKI_COMPAT
#include <p11-kit/pkcs11.h>

#include "wire.h"

#define P11_VERSION 1
#define P11_APP_ID 16
/* A frame body at most this long; longer ones end the connection. */
#define P11_BODY_MAX (64 * 1024)
/* Bounds inside a body (each checked by the reader or the token). */
#define P11_ATTRS_MAX 48	       /* attributes in one template or object */
#define P11_ATTR_VALUE_MAX (16 * 1024) /* one attribute's value */
#define P11_DATA_MAX (32 * 1024)       /* data to sign in one call */
#define P11_RANDOM_MAX 4096	       /* bytes of C_GenerateRandom per call */
#define P11_FIND_MAX 256	       /* handles returned per C_FindObjects */
#define P11_SIG_MAX 512		       /* a signature to verify (RSA-4096's) */
#define P11_PIN_MIN 4
#define P11_PIN_MAX 64
#define P11_LABEL 32 /* CK_TOKEN_INFO label, blank-padded */
#define P11_SERIAL 16

/* Operations: the PKCS#11 function each one carries. */
enum p11_op {
	P11_OP_PING = 1,	 /* -> u32 token present (1) */
	P11_OP_FINALIZE,	 /* forget the application's sessions and login */
	P11_OP_TOKEN_INFO,	 /* -> label[32], serial[16], u64 flags, u32 sessions, u32 rw sessions */
	P11_OP_MECH_LIST,	 /* -> u32 n, n x u64 */
	P11_OP_MECH_INFO,	 /* u64 mech -> u64 min, u64 max, u64 flags */
	P11_OP_INIT_TOKEN,	 /* bytes so_pin, label[32] */
	P11_OP_OPEN_SESSION,	 /* u64 flags -> u64 session */
	P11_OP_CLOSE_SESSION,	 /* u64 session */
	P11_OP_CLOSE_ALL,	 /* */
	P11_OP_SESSION_INFO,	 /* u64 session -> u64 state, u64 flags */
	P11_OP_LOGIN,		 /* u64 session, u64 user type, bytes pin */
	P11_OP_LOGOUT,		 /* u64 session */
	P11_OP_INIT_PIN,	 /* u64 session, bytes pin */
	P11_OP_SET_PIN,		 /* u64 session, bytes old, bytes new */
	P11_OP_CREATE_OBJECT,	 /* u64 session, template -> u64 object */
	P11_OP_DESTROY_OBJECT,	 /* u64 session, u64 object */
	P11_OP_GET_ATTRS,	 /* u64 session, u64 object, u32 n, n x (u64 type, u64 room) -> see below */
	P11_OP_SET_ATTRS,	 /* u64 session, u64 object, template */
	P11_OP_FIND_INIT,	 /* u64 session, template */
	P11_OP_FIND,		 /* u64 session, u32 max -> u32 n, n x u64 */
	P11_OP_FIND_FINAL,	 /* u64 session */
	P11_OP_GENERATE_KEY_PAIR, /* u64 session, u64 mech, bytes param, template pub, template priv -> u64 pub, u64 priv */
	P11_OP_SIGN_INIT,	 /* u64 session, u64 mech, bytes param, u64 key */
	P11_OP_SIGN,		 /* u64 session, u8 length only, u64 room, bytes data -> u64 len, bytes sig */
	P11_OP_SIGN_UPDATE,	 /* u64 session, bytes data */
	P11_OP_SIGN_FINAL,	 /* u64 session, u8 length only, u64 room -> u64 len, bytes sig */
	P11_OP_GENERATE_RANDOM,	 /* u64 session, u32 n -> bytes */
	P11_OP_DECRYPT_INIT,	 /* u64 session, u64 mech, bytes param, u64 key (OAEP param: see below) */
	P11_OP_DECRYPT,		 /* u64 session, u8 length only, u64 room, u64 total, bytes data -> u64 len, bytes out */
	P11_OP_SIGN_INIT_SIGN,	 /* SIGN_INIT's arguments, then SIGN's -> as SIGN */
	P11_OP_GENERATE_KEY,	 /* u64 session, u64 mech, bytes param, template -> u64 key */
	P11_OP_ENCRYPT_INIT,	 /* u64 session, u64 mech, bytes param, u64 key */
	P11_OP_ENCRYPT,		 /* as DECRYPT */
	P11_OP_ENCRYPT_UPDATE,	 /* u64 session, u8 length only, u64 room, u64 total, bytes data -> u64 len, bytes out */
	P11_OP_ENCRYPT_FINAL,	 /* u64 session, u8 length only, u64 room -> u64 len, bytes out */
	P11_OP_DECRYPT_UPDATE,	 /* as ENCRYPT_UPDATE */
	P11_OP_DECRYPT_FINAL,	 /* as ENCRYPT_FINAL */
	P11_OP_DIGEST_INIT,	 /* u64 session, u64 mech, bytes param */
	P11_OP_DIGEST,		 /* as SIGN */
	P11_OP_DIGEST_UPDATE,	 /* u64 session, bytes data */
	P11_OP_DIGEST_KEY,	 /* u64 session, u64 key */
	P11_OP_DIGEST_FINAL,	 /* as SIGN_FINAL */
	P11_OP_VERIFY_INIT,	 /* as SIGN_INIT */
	P11_OP_VERIFY,		 /* u64 session, bytes data, bytes signature */
	P11_OP_VERIFY_UPDATE,	 /* u64 session, bytes data */
	P11_OP_VERIFY_FINAL,	 /* u64 session, bytes signature */
	P11_OP_COPY_OBJECT,	 /* u64 session, u64 object, template -> u64 object */
	P11_OP_OBJECT_SIZE,	 /* u64 session, u64 object -> u64 size */
	P11_OP_WRAP_KEY,	 /* u64 session, u64 mech, bytes param, u64 wrapping key, u64 key, u8 length only, u64 room -> u64 len, bytes */
	P11_OP_UNWRAP_KEY,	 /* u64 session, u64 mech, bytes param, u64 unwrapping key, bytes wrapped, template -> u64 key */
	P11_OP_DERIVE_KEY,	 /* u64 session, u64 mech, bytes param, u64 base key, template -> u64 key */
	P11_OP_ENCRYPT_INIT_ENCRYPT, /* ENCRYPT_INIT's arguments, then ENCRYPT's -> as ENCRYPT */
	P11_OP_DECRYPT_INIT_DECRYPT, /* DECRYPT_INIT's arguments, then DECRYPT's -> as DECRYPT */
	P11_OP_MAX
};
/* P11_OP_GET_ATTRS: room is the caller's buffer size, or P11_NO_BUFFER
 * for a NULL pValue (a length query). The reply, for CKR_OK,
 * CKR_ATTRIBUTE_SENSITIVE, CKR_ATTRIBUTE_TYPE_INVALID and
 * CKR_BUFFER_TOO_SMALL alike: u32 n, n x (u64 ulValueLen, bytes value),
 * the value empty unless it was copied. SIGN and SIGN_FINAL answer u64 len
 * and an empty signature with CKR_BUFFER_TOO_SMALL or a length query;
 * DECRYPT likewise (the length: the message's, or for a length query the
 * modulus's). ENCRYPT and DECRYPT carry the whole message's length
 * (total) beside its bytes, and so do their UPDATEs: a length query may
 * name input longer than a frame (the module then sends it in pieces:
 * UPDATEs, and a FINAL); otherwise total is the data's length. The UPDATEs and FINALs, DIGEST and
 * DIGEST_FINAL answer as SIGN does; a FINAL whose output is longer than
 * P11_DATA_MAX (a GCM decryption's message, which comes out only when
 * its tag checks) answers the length still to come and a first piece:
 * the module calls it again for the rest. SIGN_INIT_SIGN is C_SignInit
 * and C_Sign in one request, ENCRYPT_INIT_ENCRYPT C_EncryptInit and
 * C_Encrypt, DECRYPT_INIT_DECRYPT C_DecryptInit and C_Decrypt (the module
 * defers an init it has seen succeed: docs/pkcs11.md): if the INIT part
 * fails, its CK_RV alone comes back and no operation starts; otherwise
 * the reply is the second call's, whose session must be the INIT part's
 * (another is CKR_ARGUMENTS_BAD, and ends the operation it started). */
/* P11_OP_DECRYPT_INIT with CKM_RSA_PKCS_OAEP: CK_RSA_PKCS_OAEP_PARAMS
 * holds a pointer to its label, so its param travels flattened: u64
 * hashAlg, u64 mgf, u64 source, then the label's bytes to the end (at
 * most P11_OAEP_LABEL_MAX). */
#define P11_OAEP_LABEL_MAX 256
/* P11_OP_DERIVE_KEY with CKM_ECDH1_DERIVE or CKM_ECDH1_COFACTOR_DERIVE:
 * CK_ECDH1_DERIVE_PARAMS holds pointers too, and travels as u64 kdf,
 * bytes shared data, bytes public data. */
#define P11_NO_BUFFER UINT64_MAX

/* One attribute of a decoded template: value points into the frame. */
struct p11_attr {
	uint64_t type;
	const uint8_t *value;
	uint32_t len;
};

struct p11_template {
	struct p11_attr a[P11_ATTRS_MAX];
	uint32_t n;
};

/* A byte string of at most max bytes (in the frame), or { NULL, 0 } with
 * r->bad set. */
struct wire_bytes p11_get_bytes(struct wire_reader *r, uint32_t max);
/* A template: u32 n <= P11_ATTRS_MAX, n x (u64 type, bytes value). */
void p11_get_template(struct wire_reader *r, struct p11_template *t);
void p11_put_template(struct wire_writer *w, const CK_ATTRIBUTE *a, unsigned long n);

/* The body length in a frame's 4-byte header, or 0 if out of bounds
 * (0 or > P11_BODY_MAX): the connection is then ended. */
uint32_t p11_frame_len(const uint8_t hdr[4]);

/* Request and reply headers. */
void p11_put_request(struct wire_writer *w, enum p11_op op, const uint8_t app[P11_APP_ID]);
void p11_put_reply(struct wire_writer *w, uint8_t op, CK_RV rv);

/* CK_ULONG and CK_BBOOL attribute values as they travel. */
bool p11_attr_ulong(const struct p11_attr *a, CK_ULONG *v);
bool p11_attr_bool(const struct p11_attr *a, CK_BBOOL *v);

#endif

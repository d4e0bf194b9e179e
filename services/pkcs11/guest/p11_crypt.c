/* SPDX-License-Identifier: ISC */
/*
 * Encryption and decryption: C_EncryptInit, C_Encrypt, C_EncryptUpdate,
 * C_EncryptFinal and the C_Decrypt* calls, with RSA (CKM_RSA_PKCS_OAEP:
 * SHA-1, SHA-256, SHA-384, SHA-512, MGF1 of the same hash, an optional
 * label; CKM_RSA_PKCS; p11_rsa.c) and AES (ECB, CBC, CBC_PAD, CTR, GCM;
 * p11_aes.c). RSA takes its input in one call; AES in any number of
 * parts. See p11_token.h and docs/pkcs11.md.
 */
#include <string.h>

#include "wipe.h"
#include "p11_rsa.h"
#include "p11_token.h"

/* The longest message a length query may name (lengths stay far from
 * overflowing). */
#define P11_TOTAL_MAX ((uint64_t)1 << 40)

static bool is_rsa(CK_MECHANISM_TYPE mech)
{
	return mech == CKM_RSA_PKCS_OAEP || mech == CKM_RSA_PKCS;
}

/* The flattened CK_RSA_PKCS_OAEP_PARAMS (p11_wire.h) into the operation;
 * none at all is RFC 8017's default: SHA-1, MGF1 with SHA-1, no label
 * (what a caller that passes no parameter, as pkcs11-tool 0.23's --wrap
 * does, means). */
static CK_RV oaep_params(struct p11_opstate *op, struct wire_bytes param)
{
	if (!param.len) {
		op->hash = CKM_SHA_1;
		return CKR_OK;
	}
	struct wire_reader r;
	wire_reader_init(&r, param.p, param.len);
	CK_MECHANISM_TYPE hash = wire_get_u64(&r);
	CK_RSA_PKCS_MGF_TYPE mgf = wire_get_u64(&r);
	CK_RSA_PKCS_OAEP_SOURCE_TYPE source = wire_get_u64(&r);
	struct wire_bytes label = wire_get_rest(&r);
	if (r.bad || label.len > P11_OAEP_LABEL_MAX)
		return CKR_MECHANISM_PARAM_INVALID;
	if (!p11_rsa_hash_len(hash) || mgf != p11_rsa_mgf1(hash) ||
	    (source != CKZ_DATA_SPECIFIED && !(source == 0 && label.len == 0)))
		return CKR_MECHANISM_PARAM_INVALID;
	op->hash = hash;
	op->u.oaep.len = (uint32_t)label.len;
	memcpy(op->u.oaep.label, label.p, label.len);
	return CKR_OK;
}

CK_RV p11_rsa_params(struct p11_opstate *op, CK_MECHANISM_TYPE mech, struct wire_bytes param)
{
	if (mech == CKM_RSA_PKCS)
		return param.len ? CKR_MECHANISM_PARAM_INVALID : CKR_OK;
	return oaep_params(op, param);
}

/* C_EncryptInit and C_DecryptInit (whole: nothing follows their
 * arguments; else the C_Encrypt or C_Decrypt after them may). */
static CK_RV crypt_init(struct p11_call *c, enum p11_kind kind, bool whole)
{
	struct p11_init_args a;
	CK_RV rv = p11_get_init_args(c, &a, whole, kind);
	if (rv != CKR_OK)
		return rv;
	bool encrypt = kind == P11_KIND_ENCRYPT;
	CK_ATTRIBUTE_TYPE usage = encrypt ? CKA_ENCRYPT : CKA_DECRYPT;
	struct p11_opstate *op = &c->s->op[kind];
	if (is_rsa(a.mech)) {
		rv = p11_key_usable(a.key, encrypt ? CKO_PUBLIC_KEY : CKO_PRIVATE_KEY, CKK_RSA, usage);
		if (rv == CKR_OK)
			rv = p11_rsa_params(op, a.mech, a.param);
	} else if (p11_aes_mode(a.mech)) {
		rv = p11_key_usable(a.key, CKO_SECRET_KEY, CKK_AES, usage);
		uint32_t len;
		const uint8_t *v = rv == CKR_OK ? p11_obj_attr(a.key, CKA_VALUE, &len) : NULL;
		if (v)
			rv = p11_aes_init(&op->u.aes, a.mech, encrypt, v, len, a.param.p, a.param.len);
		else if (rv == CKR_OK)
			rv = CKR_KEY_HANDLE_INVALID;
	} else {
		rv = CKR_MECHANISM_INVALID;
	}
	if (rv != CKR_OK) {
		wipe(op, sizeof *op); /* p11_aes_init cleans up after itself */
		return rv;
	}
	op->on = true;
	op->mech = a.mech;
	op->key = a.key->handle;
	return CKR_OK;
}

CK_RV p11_op_encrypt_init(struct p11_call *c)
{
	return crypt_init(c, P11_KIND_ENCRYPT, true);
}

CK_RV p11_op_decrypt_init(struct p11_call *c)
{
	return crypt_init(c, P11_KIND_DECRYPT, true);
}

/* RSA in one call: encrypt to a public key (the modulus's length out)
 * or decrypt with a private one (the ciphertext exactly that long; the
 * message's length out, a length query answering the modulus's). */
static CK_RV rsa_crypt(struct p11_call *c, enum p11_kind kind, bool query, uint64_t room, struct wire_bytes data)
{
	struct p11_opstate *op = &c->s->op[kind];
	struct p11_object *k = p11_object(c, op->key);
	if (!k)
		return p11_op_done(c, kind, CKR_KEY_HANDLE_INVALID);
	struct p11_rsa_key key;
	p11_rsa_view(k, &key);
	size_t klen = (p11_rsa_bits(&key) + 7) / 8;
	CK_MECHANISM_TYPE hash = op->mech == CKM_RSA_PKCS_OAEP ? op->hash : 0;
	const uint8_t *label = hash ? op->u.oaep.label : NULL;
	size_t label_len = hash ? op->u.oaep.len : 0;
	CK_RV rv = CKR_OK;
	bool encrypt = kind == P11_KIND_ENCRYPT;
	if (encrypt && p11_length_only(c, query, room, klen, &rv))
		return rv;
	if (!encrypt && query) {
		wire_put_u64(c->w, klen);
		wire_put_string(c->w, NULL, 0);
		return CKR_OK;
	}
	if (encrypt ? data.len > p11_rsa_encrypt_max(&key, hash) : data.len != klen)
		return p11_op_done(c, kind, encrypt ? CKR_DATA_LEN_RANGE : CKR_ENCRYPTED_DATA_LEN_RANGE);
	uint8_t *msg = c->t->out;
	size_t mlen = encrypt ? klen : 0;
	br_hmac_drbg_context drbg;
	bool ok = c->t->env->seed(c->t->env->ctx, &drbg) &&
		  (encrypt ? p11_rsa_encrypt(&key, &drbg, hash, label, label_len, data.p, data.len, msg)
			   : p11_rsa_decrypt(&key, &drbg, hash, label, label_len, data.p, data.len, msg, &mlen));
	wipe(&drbg, sizeof drbg);
	if (!ok) {
		rv = p11_op_done(c, kind, encrypt ? CKR_FUNCTION_FAILED : CKR_ENCRYPTED_DATA_INVALID);
	} else if (!p11_length_only(c, false, room, mlen, &rv)) {
		wire_put_u64(c->w, mlen);
		wire_put_string(c->w, msg, mlen);
		rv = p11_op_done(c, kind, CKR_OK);
	}
	wipe(msg, klen);
	return rv;
}

/* AES, a whole message in one call: its update and its final call. */
static CK_RV aes_oneshot(struct p11_call *c, enum p11_kind kind, bool query, uint64_t room, uint64_t total,
			 struct wire_bytes data)
{
	struct p11_aes *a = &c->s->op[kind].u.aes;
	size_t bound = p11_aes_oneshot_len(a, total);
	CK_RV rv;
	if (p11_length_only(c, query, room, bound, &rv))
		return rv;
	uint8_t *out = c->t->out;
	size_t n = 0, m = 0;
	bool more;
	rv = p11_aes_update(a, data.p, data.len, out, &n);
	if (rv == CKR_OK)
		rv = p11_aes_final(a, out + n, P11_DATA_MAX + 2 * P11_AES_BLOCK - n, &m, &more);
	if (rv == CKR_OK) {
		wire_put_u64(c->w, n + m);
		wire_put_string(c->w, out, n + m);
	}
	wipe(out, n + m);
	return p11_op_done(c, kind, rv);
}

/* C_Encrypt and C_Decrypt: a length query may name a whole message longer
 * than this frame (total, p11_wire.h); otherwise the data is the
 * message. */
static CK_RV crypt(struct p11_call *c, enum p11_kind kind)
{
	bool query = wire_get_u8(c->r) != 0;
	uint64_t room = wire_get_u64(c->r), total = wire_get_u64(c->r);
	struct wire_bytes data = p11_get_bytes(c->r, P11_DATA_MAX);
	CK_RV rv = p11_ongoing(c, kind);
	if (rv != CKR_OK)
		return rv;
	struct p11_opstate *op = &c->s->op[kind];
	if (c->r->bad || !wire_done(c->r) || (total != data.len && !query))
		return p11_op_done(c, kind, CKR_ARGUMENTS_BAD);
	if (total > P11_TOTAL_MAX)
		return p11_op_done(c, kind, CKR_DATA_LEN_RANGE);
	if (op->updated)
		return p11_op_done(c, kind, CKR_OPERATION_ACTIVE);
	if (is_rsa(op->mech))
		return rsa_crypt(c, kind, query, room, data);
	return aes_oneshot(c, kind, query, room, total, data);
}

CK_RV p11_op_encrypt(struct p11_call *c)
{
	return crypt(c, P11_KIND_ENCRYPT);
}

CK_RV p11_op_decrypt(struct p11_call *c)
{
	return crypt(c, P11_KIND_DECRYPT);
}

/* C_EncryptInit and C_Encrypt in one request (or C_DecryptInit and
 * C_Decrypt): a failed INIT part answers alone (its arguments are all the
 * handler reads, and no operation starts); otherwise it is C_Encrypt,
 * whose arguments start with their own session handle (the same
 * session's), on the operation it started. */
static CK_RV init_crypt(struct p11_call *c, enum p11_kind kind)
{
	CK_RV rv = crypt_init(c, kind, false);
	if (rv != CKR_OK)
		return rv; /* the INIT part's refusal, alone */
	if ((rv = p11_then_session(c, kind)) != CKR_OK)
		return rv;
	return crypt(c, kind);
}

CK_RV p11_op_encrypt_init_encrypt(struct p11_call *c)
{
	return init_crypt(c, P11_KIND_ENCRYPT);
}

CK_RV p11_op_decrypt_init_decrypt(struct p11_call *c)
{
	return init_crypt(c, P11_KIND_DECRYPT);
}

/* C_EncryptUpdate and C_DecryptUpdate (AES only: RSA takes one call). */
static CK_RV crypt_update(struct p11_call *c, enum p11_kind kind)
{
	bool query = wire_get_u8(c->r) != 0;
	uint64_t room = wire_get_u64(c->r), total = wire_get_u64(c->r);
	struct wire_bytes data = p11_get_bytes(c->r, P11_DATA_MAX);
	CK_RV rv = p11_ongoing(c, kind);
	if (rv != CKR_OK)
		return rv;
	struct p11_opstate *op = &c->s->op[kind];
	if (c->r->bad || !wire_done(c->r) || (total != data.len && !query))
		return p11_op_done(c, kind, CKR_ARGUMENTS_BAD);
	if (is_rsa(op->mech))
		return p11_op_done(c, kind, CKR_FUNCTION_NOT_SUPPORTED);
	if (total > P11_TOTAL_MAX)
		return p11_op_done(c, kind, CKR_DATA_LEN_RANGE);
	if (p11_length_only(c, query, room, p11_aes_update_len(&op->u.aes, total), &rv))
		return rv;
	uint8_t *out = c->t->out;
	size_t n = 0;
	rv = p11_aes_update(&op->u.aes, data.p, data.len, out, &n);
	if (rv != CKR_OK)
		return p11_op_done(c, kind, rv);
	op->updated = true;
	wire_put_u64(c->w, n);
	wire_put_string(c->w, out, n);
	wipe(out, n);
	return CKR_OK;
}

CK_RV p11_op_encrypt_update(struct p11_call *c)
{
	return crypt_update(c, P11_KIND_ENCRYPT);
}

CK_RV p11_op_decrypt_update(struct p11_call *c)
{
	return crypt_update(c, P11_KIND_DECRYPT);
}

/* C_EncryptFinal and C_DecryptFinal. A GCM decryption's message comes out
 * here whole once its tag checks, in pieces of at most P11_DATA_MAX: the
 * reply names what is still to come, this piece included, and the
 * operation stays on until the last piece is out. */
static CK_RV crypt_final(struct p11_call *c, enum p11_kind kind)
{
	bool query = wire_get_u8(c->r) != 0;
	uint64_t room = wire_get_u64(c->r);
	CK_RV rv = p11_ongoing(c, kind);
	if (rv != CKR_OK)
		return rv;
	struct p11_opstate *op = &c->s->op[kind];
	if (c->r->bad || !wire_done(c->r))
		return p11_op_done(c, kind, CKR_ARGUMENTS_BAD);
	if (is_rsa(op->mech))
		return p11_op_done(c, kind, CKR_FUNCTION_NOT_SUPPORTED);
	size_t len = p11_aes_final_len(&op->u.aes), n = 0;
	if (p11_length_only(c, query, room, len, &rv))
		return rv;
	uint8_t *out = c->t->out;
	bool more;
	rv = p11_aes_final(&op->u.aes, out, P11_DATA_MAX, &n, &more);
	if (rv == CKR_OK) {
		/* What is still to come: this piece and the rest (a decryption
		 * with padding knows it only now). */
		wire_put_u64(c->w, more ? p11_aes_final_len(&op->u.aes) + n : n);
		wire_put_string(c->w, out, n);
	}
	wipe(out, n);
	if (rv != CKR_OK || !more)
		return p11_op_done(c, kind, rv);
	op->updated = true;
	return CKR_OK;
}

CK_RV p11_op_encrypt_final(struct p11_call *c)
{
	return crypt_final(c, P11_KIND_ENCRYPT);
}

CK_RV p11_op_decrypt_final(struct p11_call *c)
{
	return crypt_final(c, P11_KIND_DECRYPT);
}

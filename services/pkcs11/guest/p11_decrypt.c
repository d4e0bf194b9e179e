/* SPDX-License-Identifier: ISC */
/*
 * Decryption with an RSA private key: C_DecryptInit and single-part
 * C_Decrypt, CKM_RSA_PKCS_OAEP (SHA-1, SHA-256, SHA-384, SHA-512, MGF1
 * of the same hash, an optional label) and CKM_RSA_PKCS. See
 * p11_token.h; the crypto is p11_rsa.c's.
 */
#include <string.h>

#include "wipe.h"
#include "p11_rsa.h"
#include "p11_token.h"

/* The flattened CK_RSA_PKCS_OAEP_PARAMS (p11_wire.h) into the session. */
static CK_RV oaep_params(struct p11_session *s, struct wire_bytes param)
{
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
	s->oaep_hash = hash;
	s->label_len = (uint32_t)label.len;
	memcpy(s->label, label.p, label.len);
	return CKR_OK;
}

CK_RV p11_op_decrypt_init(struct p11_call *c)
{
	struct p11_init_args a;
	CK_RV rv = p11_get_init_args(c, &a, true, CKA_DECRYPT);
	if (rv != CKR_OK)
		return rv;
	if (a.mech != CKM_RSA_PKCS_OAEP && a.mech != CKM_RSA_PKCS)
		return CKR_MECHANISM_INVALID;
	if (a.mech == CKM_RSA_PKCS && a.param.len)
		return CKR_MECHANISM_PARAM_INVALID;
	if ((rv = p11_key_usable(a.key, CKK_RSA, CKA_DECRYPT)) != CKR_OK)
		return rv;
	c->s->oaep_hash = 0;
	c->s->label_len = 0;
	rv = a.mech == CKM_RSA_PKCS_OAEP ? oaep_params(c->s, a.param) : CKR_OK;
	if (rv != CKR_OK)
		return rv;
	c->s->decrypting = true;
	c->s->dmech = a.mech;
	c->s->dkey = a.key->handle;
	return CKR_OK;
}

/* Ends the session's decryption (and wipes its label). */
static CK_RV end(struct p11_session *s, CK_RV rv)
{
	s->decrypting = false;
	s->label_len = 0;
	wipe(s->label, sizeof s->label);
	return rv;
}

/* C_Decrypt. A length query answers the modulus's length; a buffer too
 * small for the message answers its length: both keep the operation. */
CK_RV p11_op_decrypt(struct p11_call *c)
{
	struct p11_session *s = c->s;
	bool query = wire_get_u8(c->r) != 0;
	uint64_t room = wire_get_u64(c->r);
	struct wire_bytes data = p11_get_bytes(c->r, P11_DATA_MAX);
	CK_RV rv = p11_ongoing(c, CKA_DECRYPT);
	if (rv != CKR_OK)
		return rv;
	if (c->r->bad || !wire_done(c->r))
		return end(s, CKR_ARGUMENTS_BAD);
	struct p11_object *k = p11_object(c, s->dkey);
	if (!k)
		return end(s, CKR_KEY_HANDLE_INVALID);
	struct p11_rsa_key key;
	p11_rsa_view(k, &key);
	size_t klen = (p11_rsa_bits(&key) + 7) / 8;
	if (query) {
		wire_put_u64(c->w, klen);
		wire_put_string(c->w, NULL, 0);
		return CKR_OK;
	}
	if (data.len != klen)
		return end(s, CKR_ENCRYPTED_DATA_LEN_RANGE);
	uint8_t msg[P11_RSA_BYTES_MAX];
	size_t mlen = 0;
	br_hmac_drbg_context drbg;
	bool ok = c->t->env->seed(c->t->env->ctx, &drbg) &&
		  p11_rsa_decrypt(&key, &drbg, s->oaep_hash, s->label, s->label_len, data.p, data.len, msg,
				  &mlen);
	wipe(&drbg, sizeof drbg);
	rv = CKR_OK;
	if (!ok) {
		rv = end(s, CKR_ENCRYPTED_DATA_INVALID);
	} else if (room < mlen) {
		wire_put_u64(c->w, mlen);
		wire_put_string(c->w, NULL, 0);
		rv = CKR_BUFFER_TOO_SMALL;
	} else {
		wire_put_u64(c->w, mlen);
		wire_put_string(c->w, msg, mlen);
		end(s, CKR_OK);
	}
	wipe(msg, sizeof msg);
	return rv;
}

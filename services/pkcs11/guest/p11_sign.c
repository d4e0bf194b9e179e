/* SPDX-License-Identifier: ISC */
/*
 * Signing: C_SignInit, C_Sign, C_SignUpdate, C_SignFinal with ECDSA
 * (p11_ec.c) and RSA PKCS#1 v1.5 and PSS (p11_rsa.c). See p11_token.h
 * and docs/pkcs11.md's mechanisms table.
 */
#include <string.h>

#include "wipe.h"
#include "p11_ec.h"
#include "p11_rsa.h"
#include "p11_token.h"

static const struct sigmech {
	CK_MECHANISM_TYPE mech;
	CK_KEY_TYPE key;
	CK_MECHANISM_TYPE hash; /* 0: the caller hashed (single-part only) */
	bool pss;
} sigmechs[] = {
	{ CKM_ECDSA, CKK_EC, 0, false },
	{ CKM_ECDSA_SHA256, CKK_EC, CKM_SHA256, false },
	{ CKM_ECDSA_SHA384, CKK_EC, CKM_SHA384, false },
	{ CKM_RSA_PKCS, CKK_RSA, 0, false },
	{ CKM_SHA256_RSA_PKCS, CKK_RSA, CKM_SHA256, false },
	{ CKM_SHA384_RSA_PKCS, CKK_RSA, CKM_SHA384, false },
	{ CKM_SHA512_RSA_PKCS, CKK_RSA, CKM_SHA512, false },
	{ CKM_RSA_PKCS_PSS, CKK_RSA, 0, true },
	{ CKM_SHA256_RSA_PKCS_PSS, CKK_RSA, CKM_SHA256, true },
	{ CKM_SHA384_RSA_PKCS_PSS, CKK_RSA, CKM_SHA384, true },
	{ CKM_SHA512_RSA_PKCS_PSS, CKK_RSA, CKM_SHA512, true },
};

static const struct sigmech *sigmech(CK_MECHANISM_TYPE mech)
{
	for (size_t i = 0; i < sizeof sigmechs / sizeof sigmechs[0]; i++)
		if (sigmechs[i].mech == mech)
			return &sigmechs[i];
	return NULL;
}

static const br_hash_class *hash_class(CK_MECHANISM_TYPE hash)
{
	switch (hash) {
	case CKM_SHA256: return &br_sha256_vtable;
	case CKM_SHA384: return &br_sha384_vtable;
	case CKM_SHA512: return &br_sha512_vtable;
	default: return NULL;
	}
}

/* CK_RSA_PKCS_PSS_PARAMS (the module passes the caller's structure as
 * it is: same ABI): the hash must be the mechanism's own if it hashes,
 * MGF1 must use the same hash (as Mbed TLS does), and the salt must fit
 * the key. */
static CK_RV pss_params(const struct sigmech *m, const struct p11_object *k, struct wire_bytes param,
			struct p11_session *s)
{
	CK_RSA_PKCS_PSS_PARAMS pp;
	if (param.len != sizeof pp)
		return CKR_MECHANISM_PARAM_INVALID;
	memcpy(&pp, param.p, sizeof pp);
	struct p11_rsa_key key;
	p11_rsa_view(k, &key);
	if (!p11_rsa_hash_len(pp.hashAlg) || (m->hash && pp.hashAlg != m->hash) ||
	    pp.mgf != p11_rsa_mgf1(pp.hashAlg) || pp.sLen > p11_rsa_pss_salt_max(&key, pp.hashAlg))
		return CKR_MECHANISM_PARAM_INVALID;
	s->pss_hash = pp.hashAlg;
	s->pss_salt = (uint32_t)pp.sLen;
	return CKR_OK;
}

CK_RV p11_op_sign_init(struct p11_call *c)
{
	struct p11_session *s = c->s;
	struct p11_init_args a;
	/* Not whole: C_Sign's arguments may follow (SIGN_INIT_SIGN). */
	CK_RV rv = p11_get_init_args(c, &a, false, CKA_SIGN);
	if (rv != CKR_OK)
		return rv;
	const struct sigmech *m = sigmech(a.mech);
	if (!m)
		return CKR_MECHANISM_INVALID;
	if (a.param.len && !m->pss)
		return CKR_MECHANISM_PARAM_INVALID;
	if ((rv = p11_key_usable(a.key, m->key, CKA_SIGN)) != CKR_OK)
		return rv;
	rv = m->pss ? pss_params(m, a.key, a.param, s) : CKR_OK;
	if (rv != CKR_OK)
		return rv;
	s->signing = true;
	s->updated = false;
	s->mech = a.mech;
	s->key = a.key->handle;
	if (m->hash)
		hash_class(m->hash)->init(&s->h.vtable);
	return CKR_OK;
}

CK_RV p11_op_sign_update(struct p11_call *c)
{
	struct p11_session *s = c->s;
	struct wire_bytes data = p11_get_bytes(c->r, P11_DATA_MAX);
	CK_RV rv = p11_ongoing(c, CKA_SIGN);
	if (rv != CKR_OK)
		return rv;
	if (c->r->bad) {
		p11_session_end_ops(c->t, s, false);
		return CKR_ARGUMENTS_BAD;
	}
	if (!sigmech(s->mech)->hash) { /* single-part only */
		p11_session_end_ops(c->t, s, false);
		return CKR_FUNCTION_NOT_SUPPORTED;
	}
	s->h.vtable->update(&s->h.vtable, data.p, data.len);
	s->updated = true;
	return CKR_OK;
}

/* The length of a key's signatures, or 0 if the key is not usable. */
static size_t sig_len(const struct sigmech *m, const struct p11_object *k)
{
	if (m->key == CKK_EC) {
		const struct p11_curve *curve = p11_curve_of(k);
		return curve ? 2 * curve->scalar : 0;
	}
	struct p11_rsa_key key;
	p11_rsa_view(k, &key);
	return (p11_rsa_bits(&key) + 7) / 8;
}

/* Whether data of len bytes may be signed by a mechanism that does not
 * hash. */
static bool raw_len_ok(const struct p11_session *s, const struct sigmech *m, size_t siglen, size_t len)
{
	if (m->key == CKK_EC)
		return len > 0 && len <= P11_EC_SIG_MAX;
	if (m->pss)
		return len == p11_rsa_hash_len(s->pss_hash);
	return len > 0 && len + 11 <= siglen; /* RFC 8017 9.2: a DigestInfo */
}

static bool sign_ec(const struct p11_object *k, const uint8_t *h, size_t hlen, uint8_t *sig)
{
	const struct p11_curve *curve = p11_curve_of(k);
	uint32_t dlen;
	const uint8_t *v = p11_obj_attr(k, CKA_VALUE, &dlen);
	uint8_t d[P11_EC_SCALAR_MAX];
	if (!v || dlen != curve->scalar)
		return false;
	memcpy(d, v, dlen);
	bool ok = p11_ec_sign(curve, d, h, hlen, sig);
	wipe(d, sizeof d);
	return ok;
}

static bool sign_rsa(struct p11_call *c, const struct p11_session *s, const struct sigmech *m,
		     const struct p11_object *k, const uint8_t *h, size_t hlen, uint8_t *sig)
{
	struct p11_rsa_key key;
	br_hmac_drbg_context drbg;
	p11_rsa_view(k, &key);
	if (!c->t->env->seed(c->t->env->ctx, &drbg))
		return false;
	bool ok = m->pss ? p11_rsa_sign_pss(&key, &drbg, s->pss_hash, s->pss_salt, h, hlen, sig)
			 : p11_rsa_sign_pkcs1(&key, &drbg, m->hash, h, hlen, sig);
	wipe(&drbg, sizeof drbg);
	return ok;
}

/* C_Sign (final false: data comes with it) and C_SignFinal. A length
 * query or a buffer too small keeps the operation; anything else ends it. */
static CK_RV sign(struct p11_call *c, bool final)
{
	struct p11_session *s = c->s;
	bool query = wire_get_u8(c->r) != 0;
	uint64_t room = wire_get_u64(c->r);
	struct wire_bytes data = { NULL, 0 };
	if (!final)
		data = p11_get_bytes(c->r, P11_DATA_MAX);
	CK_RV rv = p11_ongoing(c, CKA_SIGN);
	if (rv != CKR_OK)
		return rv;
	const struct sigmech *m = sigmech(s->mech);
	struct p11_object *k = p11_object(c, s->key);
	size_t siglen = k ? sig_len(m, k) : 0;
	if (c->r->bad || !wire_done(c->r))
		rv = CKR_ARGUMENTS_BAD;
	else if (final ? !m->hash || !s->updated : s->updated)
		rv = final ? CKR_OPERATION_NOT_INITIALIZED : CKR_OPERATION_ACTIVE;
	else if (!siglen)
		rv = CKR_KEY_HANDLE_INVALID;
	if (rv != CKR_OK) {
		p11_session_end_ops(c->t, s, false);
		return rv;
	}
	if (query || room < siglen) {
		wire_put_u64(c->w, siglen);
		wire_put_string(c->w, NULL, 0);
		return query ? CKR_OK : CKR_BUFFER_TOO_SMALL;
	}
	if (!final && !m->hash && !raw_len_ok(s, m, siglen, data.len)) {
		p11_session_end_ops(c->t, s, false);
		return CKR_DATA_LEN_RANGE;
	}
	uint8_t h[64];
	const uint8_t *in = data.p;
	size_t inlen = data.len;
	if (m->hash) {
		if (!final)
			s->h.vtable->update(&s->h.vtable, data.p, data.len);
		s->h.vtable->out(&s->h.vtable, h);
		in = h, inlen = p11_rsa_hash_len(m->hash);
	}
	wire_put_u64(c->w, siglen);
	uint8_t *sig = wire_put_string_room(c->w, siglen);
	bool ok = sig && (m->key == CKK_EC ? sign_ec(k, in, inlen, sig) : sign_rsa(c, s, m, k, in, inlen, sig));
	wipe(h, sizeof h);
	p11_session_end_ops(c->t, s, false);
	if (!ok)
		return CKR_FUNCTION_FAILED;
	c->t->signatures++;
	return CKR_OK;
}

CK_RV p11_op_sign(struct p11_call *c)
{
	return sign(c, false);
}

CK_RV p11_op_sign_final(struct p11_call *c)
{
	return sign(c, true);
}

/* C_SignInit and C_Sign in one request: a failed SIGN_INIT part answers
 * alone (its arguments are all the handler reads, and no operation
 * starts); otherwise it is C_Sign, whose arguments start with their own
 * session handle, on the operation it started. */
CK_RV p11_op_sign_init_sign(struct p11_call *c)
{
	CK_RV rv = p11_op_sign_init(c);
	if (rv != CKR_OK)
		return rv; /* the SIGN_INIT part's refusal, alone */
	c->s = p11_session_get(c, wire_get_u64(c->r));
	return sign(c, false);
}

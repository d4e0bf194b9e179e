/* SPDX-License-Identifier: ISC */
/*
 * Signing and verifying: C_SignInit, C_Sign, C_SignUpdate, C_SignFinal
 * and the C_Verify* calls, with ECDSA (p11_ec.c, services/common/ecdsa.c;
 * verification on BearSSL), Ed25519 (p11_ed.c, on libsodium; pure
 * Ed25519, single-part, as SoftHSM2 has it), RSA PKCS#1 v1.5 and PSS
 * (p11_rsa.c), HMAC
 * with SHA-1 and SHA-2 (BearSSL's br_hmac) and AES-CMAC (p11_aes.c). See
 * p11_token.h and docs/pkcs11.md's mechanisms table.
 */
#include <string.h>

#include <bearssl/bearssl_ec.h>

#include "wipe.h"
#include "p11_ec.h"
#include "p11_ed.h"
#include "p11_rsa.h"
#include "p11_token.h"

static const struct sigmech {
	CK_MECHANISM_TYPE mech;
	CK_KEY_TYPE key;
	CK_MECHANISM_TYPE hash; /* the hash it applies; 0: none (the caller hashed, or CMAC) */
	bool pss;
	bool mac; /* a secret key signs and verifies: HMAC, CMAC */
} sigmechs[] = {
	{ CKM_ECDSA, CKK_EC, 0, false, false },
	{ CKM_ECDSA_SHA256, CKK_EC, CKM_SHA256, false, false },
	{ CKM_ECDSA_SHA384, CKK_EC, CKM_SHA384, false, false },
	{ CKM_EDDSA, CKK_EC_EDWARDS, 0, false, false },
	{ CKM_RSA_PKCS, CKK_RSA, 0, false, false },
	{ CKM_SHA256_RSA_PKCS, CKK_RSA, CKM_SHA256, false, false },
	{ CKM_SHA384_RSA_PKCS, CKK_RSA, CKM_SHA384, false, false },
	{ CKM_SHA512_RSA_PKCS, CKK_RSA, CKM_SHA512, false, false },
	{ CKM_RSA_PKCS_PSS, CKK_RSA, 0, true, false },
	{ CKM_SHA256_RSA_PKCS_PSS, CKK_RSA, CKM_SHA256, true, false },
	{ CKM_SHA384_RSA_PKCS_PSS, CKK_RSA, CKM_SHA384, true, false },
	{ CKM_SHA512_RSA_PKCS_PSS, CKK_RSA, CKM_SHA512, true, false },
	{ CKM_SHA_1_HMAC, CKK_GENERIC_SECRET, CKM_SHA_1, false, true },
	{ CKM_SHA256_HMAC, CKK_GENERIC_SECRET, CKM_SHA256, false, true },
	{ CKM_SHA384_HMAC, CKK_GENERIC_SECRET, CKM_SHA384, false, true },
	{ CKM_SHA512_HMAC, CKK_GENERIC_SECRET, CKM_SHA512, false, true },
	{ CKM_AES_CMAC, CKK_AES, 0, false, true },
};

static const struct sigmech *sigmech(CK_MECHANISM_TYPE mech)
{
	for (size_t i = 0; i < sizeof sigmechs / sizeof sigmechs[0]; i++)
		if (sigmechs[i].mech == mech)
			return &sigmechs[i];
	return NULL;
}

/* The mechanisms that take their input in parts: those that hash, and
 * the MACs. The others sign a value the caller made, in one call. */
static bool multi_part(const struct sigmech *m)
{
	return m->hash || m->mac;
}

static const br_hash_class *hash_class(CK_MECHANISM_TYPE hash)
{
	switch (hash) {
	case CKM_SHA_1: return &br_sha1_vtable;
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
			struct p11_opstate *op)
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
	op->hash = pp.hashAlg;
	op->salt = (uint32_t)pp.sLen;
	return CKR_OK;
}

/* A MAC's key schedule: HMAC keys at least as long as the hash's output
 * (SoftHSM2's bound), AES keys of 16, 24 or 32 bytes. */
static CK_RV mac_start(struct p11_opstate *op, const struct sigmech *m, const struct p11_object *k)
{
	uint32_t len;
	const uint8_t *v = p11_obj_attr(k, CKA_VALUE, &len);
	if (!v)
		return CKR_KEY_HANDLE_INVALID;
	if (m->key == CKK_AES)
		return p11_cmac_init(&op->u.cmac, v, len) ? CKR_OK : CKR_KEY_SIZE_RANGE;
	if (len < p11_rsa_hash_len(m->hash) || len > P11_SECRET_MAX)
		return CKR_KEY_SIZE_RANGE;
	br_hmac_key_context kc;
	br_hmac_key_init(&kc, hash_class(m->hash), v, len);
	br_hmac_init(&op->u.hmac, &kc, 0);
	wipe(&kc, sizeof kc);
	return CKR_OK;
}

/* C_SignInit (kind P11_KIND_SIGN) and C_VerifyInit. */
static CK_RV sig_init(struct p11_call *c, enum p11_kind kind, bool whole)
{
	struct p11_init_args a;
	CK_RV rv = p11_get_init_args(c, &a, whole, kind);
	if (rv != CKR_OK)
		return rv;
	const struct sigmech *m = sigmech(a.mech);
	if (!m)
		return CKR_MECHANISM_INVALID;
	/* CKM_EDDSA takes none: the module sends CK_EDDSA_PARAMS's pure
	 * Ed25519 form as none, and refuses the others (module.c). */
	if (a.param.len && !m->pss)
		return CKR_MECHANISM_PARAM_INVALID;
	CK_OBJECT_CLASS cls = m->mac ? CKO_SECRET_KEY : kind == P11_KIND_SIGN ? CKO_PRIVATE_KEY : CKO_PUBLIC_KEY;
	if ((rv = p11_key_usable(a.key, cls, m->key, kind == P11_KIND_SIGN ? CKA_SIGN : CKA_VERIFY)) != CKR_OK)
		return rv;
	struct p11_opstate *op = &c->s->op[kind];
	if (m->pss)
		rv = pss_params(m, a.key, a.param, op);
	if (rv == CKR_OK && m->mac)
		rv = mac_start(op, m, a.key);
	else if (rv == CKR_OK && m->hash)
		hash_class(m->hash)->init(&op->u.h.vtable);
	if (rv != CKR_OK) {
		p11_op_end(op);
		return rv;
	}
	op->on = true;
	op->mech = a.mech;
	op->key = a.key->handle;
	return CKR_OK;
}

CK_RV p11_op_sign_init(struct p11_call *c)
{
	/* Not whole: C_Sign's arguments may follow (SIGN_INIT_SIGN). */
	return sig_init(c, P11_KIND_SIGN, false);
}

CK_RV p11_op_verify_init(struct p11_call *c)
{
	return sig_init(c, P11_KIND_VERIFY, true);
}

static void absorb(struct p11_opstate *op, const struct sigmech *m, const uint8_t *p, size_t len)
{
	if (m->mac && m->key == CKK_AES)
		p11_cmac_update(&op->u.cmac, p, len);
	else if (m->mac)
		br_hmac_update(&op->u.hmac, p, len);
	else
		op->u.h.vtable->update(&op->u.h.vtable, p, len);
}

static CK_RV sig_update(struct p11_call *c, enum p11_kind kind)
{
	struct wire_bytes data = p11_get_bytes(c->r, P11_DATA_MAX);
	CK_RV rv = p11_ongoing(c, kind);
	if (rv != CKR_OK)
		return rv;
	struct p11_opstate *op = &c->s->op[kind];
	if (c->r->bad || !wire_done(c->r))
		return p11_op_done(c, kind, CKR_ARGUMENTS_BAD);
	const struct sigmech *m = sigmech(op->mech);
	if (!multi_part(m)) /* single-part only */
		return p11_op_done(c, kind, CKR_FUNCTION_NOT_SUPPORTED);
	absorb(op, m, data.p, data.len);
	op->updated = true;
	return CKR_OK;
}

CK_RV p11_op_sign_update(struct p11_call *c)
{
	return sig_update(c, P11_KIND_SIGN);
}

CK_RV p11_op_verify_update(struct p11_call *c)
{
	return sig_update(c, P11_KIND_VERIFY);
}

/* The length of a key's signatures (or MACs), or 0 if the key is not
 * usable. */
static size_t sig_len(const struct sigmech *m, const struct p11_object *k)
{
	if (m->mac)
		return m->key == CKK_AES ? P11_AES_BLOCK : p11_rsa_hash_len(m->hash);
	if (m->key == CKK_EC_EDWARDS)
		return P11_ED_SIG;
	if (m->key == CKK_EC) {
		const struct p11_curve *curve = p11_curve_of(k);
		return curve ? 2 * curve->scalar : 0;
	}
	struct p11_rsa_key key;
	p11_rsa_view(k, &key);
	return (p11_rsa_bits(&key) + 7) / 8;
}

/* Whether data of len bytes may be signed by a mechanism that does not
 * hash. Ed25519 signs a message of any length (what p11_get_bytes let
 * in), empty too. */
static bool raw_len_ok(const struct p11_opstate *op, const struct sigmech *m, size_t siglen, size_t len)
{
	if (m->key == CKK_EC_EDWARDS)
		return true;
	if (m->key == CKK_EC)
		return len > 0 && len <= P11_EC_SIG_MAX;
	if (m->pss)
		return len == p11_rsa_hash_len(op->hash);
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

static bool sign_rsa(struct p11_call *c, const struct p11_opstate *op, const struct sigmech *m,
		     const struct p11_object *k, const uint8_t *h, size_t hlen, uint8_t *sig)
{
	struct p11_rsa_key key;
	br_hmac_drbg_context drbg;
	p11_rsa_view(k, &key);
	if (!c->t->env->seed(c->t->env->ctx, &drbg))
		return false;
	bool ok = m->pss ? p11_rsa_sign_pss(&key, &drbg, op->hash, op->salt, h, hlen, sig)
			 : p11_rsa_sign_pkcs1(&key, &drbg, m->hash, h, hlen, sig);
	wipe(&drbg, sizeof drbg);
	return ok;
}

/* What a signature covers: the data itself (mechanisms that do not hash)
 * or the hash of all of it (data: the last of it, for a single-part
 * call). A MAC's tag goes to out. in and *inlen point at the value. */
static void finish_input(struct p11_opstate *op, const struct sigmech *m, struct wire_bytes data, bool final,
			 uint8_t out[64], const uint8_t **in, size_t *inlen)
{
	*in = data.p, *inlen = data.len;
	if (!multi_part(m))
		return;
	if (!final)
		absorb(op, m, data.p, data.len);
	if (m->mac && m->key == CKK_AES) {
		p11_cmac_out(&op->u.cmac, out);
		*inlen = P11_AES_BLOCK;
	} else if (m->mac) {
		*inlen = br_hmac_out(&op->u.hmac, out);
	} else {
		op->u.h.vtable->out(&op->u.h.vtable, out);
		*inlen = p11_rsa_hash_len(m->hash);
	}
	*in = out;
}

/* The checks C_Sign, C_SignFinal, C_Verify and C_VerifyFinal share, their
 * arguments read: CKR_OK, or the error that ends the operation. */
static CK_RV finish_checks(struct p11_call *c, const struct p11_opstate *op, const struct sigmech *m, bool final)
{
	if (c->r->bad || !wire_done(c->r))
		return CKR_ARGUMENTS_BAD;
	if (final && !multi_part(m))
		return CKR_FUNCTION_NOT_SUPPORTED;
	if (!final && op->updated)
		return CKR_OPERATION_ACTIVE;
	return CKR_OK;
}

/* C_Sign (final false: data comes with it) and C_SignFinal. A length
 * query or a buffer too small keeps the operation; anything else ends it. */
static CK_RV sign(struct p11_call *c, bool final)
{
	bool query = wire_get_u8(c->r) != 0;
	uint64_t room = wire_get_u64(c->r);
	struct wire_bytes data = { NULL, 0 };
	if (!final)
		data = p11_get_bytes(c->r, P11_DATA_MAX);
	CK_RV rv = p11_ongoing(c, P11_KIND_SIGN);
	if (rv != CKR_OK)
		return rv;
	struct p11_opstate *op = &c->s->op[P11_KIND_SIGN];
	const struct sigmech *m = sigmech(op->mech);
	struct p11_object *k = p11_object(c, op->key);
	size_t siglen = k ? sig_len(m, k) : 0;
	rv = finish_checks(c, op, m, final);
	if (rv == CKR_OK && !siglen)
		rv = CKR_KEY_HANDLE_INVALID;
	if (rv != CKR_OK)
		return p11_op_done(c, P11_KIND_SIGN, rv);
	if (p11_length_only(c, query, room, siglen, &rv))
		return rv;
	if (!final && !multi_part(m) && !raw_len_ok(op, m, siglen, data.len))
		return p11_op_done(c, P11_KIND_SIGN, CKR_DATA_LEN_RANGE);
	uint8_t h[64];
	const uint8_t *in;
	size_t inlen;
	finish_input(op, m, data, final, h, &in, &inlen);
	wire_put_u64(c->w, siglen);
	uint8_t *sig = wire_put_string_room(c->w, siglen);
	bool ok = sig != NULL;
	if (ok && m->mac)
		memcpy(sig, in, siglen);
	else if (ok)
		ok = m->key == CKK_EC ? sign_ec(k, in, inlen, sig)
		     : m->key == CKK_EC_EDWARDS ? p11_ed_sign(k, in, inlen, sig)
						 : sign_rsa(c, op, m, k, in, inlen, sig);
	wipe(h, sizeof h);
	p11_op_done(c, P11_KIND_SIGN, CKR_OK);
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
 * session handle (the same session's), on the operation it started. */
CK_RV p11_op_sign_init_sign(struct p11_call *c)
{
	CK_RV rv = p11_op_sign_init(c);
	if (rv != CKR_OK)
		return rv; /* the SIGN_INIT part's refusal, alone */
	if ((rv = p11_then_session(c, P11_KIND_SIGN)) != CKR_OK)
		return rv;
	return sign(c, false);
}

/* ---- verification */

static bool verify_ec(const struct p11_object *k, const uint8_t *h, size_t hlen, const uint8_t *sig,
		      size_t siglen)
{
	const struct p11_curve *curve = p11_curve_of(k);
	uint32_t len;
	const uint8_t *pt = p11_obj_attr(k, CKA_EC_POINT, &len);
	if (!pt || len < 3)
		return false;
	br_ec_public_key pk = { curve->id, (unsigned char *)pt + 2, len - 2 };
	return br_ecdsa_i31_vrfy_raw(&br_ec_all_m31, h, hlen, &pk, sig, siglen) == 1;
}

/* Constant time: a MAC's check says nothing of where it differs. */
static bool same(const uint8_t *a, const uint8_t *b, size_t len)
{
	unsigned d = 0;
	for (size_t i = 0; i < len; i++)
		d |= a[i] ^ b[i];
	return d == 0;
}

/* C_Verify (final false: data comes with it) and C_VerifyFinal: the
 * operation ends either way. */
static CK_RV verify(struct p11_call *c, bool final)
{
	struct wire_bytes data = { NULL, 0 };
	if (!final)
		data = p11_get_bytes(c->r, P11_DATA_MAX);
	struct wire_bytes sig = p11_get_bytes(c->r, P11_SIG_MAX);
	CK_RV rv = p11_ongoing(c, P11_KIND_VERIFY);
	if (rv != CKR_OK)
		return rv;
	struct p11_opstate *op = &c->s->op[P11_KIND_VERIFY];
	const struct sigmech *m = sigmech(op->mech);
	struct p11_object *k = p11_object(c, op->key);
	size_t siglen = k ? sig_len(m, k) : 0;
	rv = finish_checks(c, op, m, final);
	if (rv == CKR_OK && !siglen)
		rv = CKR_KEY_HANDLE_INVALID;
	if (rv == CKR_OK && sig.len != siglen)
		rv = CKR_SIGNATURE_LEN_RANGE;
	if (rv == CKR_OK && !final && !multi_part(m) && !raw_len_ok(op, m, siglen, data.len))
		rv = CKR_DATA_LEN_RANGE;
	if (rv != CKR_OK)
		return p11_op_done(c, P11_KIND_VERIFY, rv);
	uint8_t h[64];
	const uint8_t *in;
	size_t inlen;
	finish_input(op, m, data, final, h, &in, &inlen);
	bool ok;
	if (m->mac) {
		ok = same(in, sig.p, siglen);
	} else if (m->key == CKK_EC) {
		ok = verify_ec(k, in, inlen, sig.p, sig.len);
	} else if (m->key == CKK_EC_EDWARDS) {
		ok = p11_ed_verify(k, in, inlen, sig.p);
	} else {
		struct p11_rsa_key key;
		p11_rsa_view(k, &key);
		ok = m->pss ? p11_rsa_verify_pss(&key, op->hash, op->salt, in, inlen, sig.p)
			    : p11_rsa_verify_pkcs1(&key, m->hash, in, inlen, sig.p);
	}
	wipe(h, sizeof h);
	return p11_op_done(c, P11_KIND_VERIFY, ok ? CKR_OK : CKR_SIGNATURE_INVALID);
}

CK_RV p11_op_verify(struct p11_call *c)
{
	return verify(c, false);
}

CK_RV p11_op_verify_final(struct p11_call *c)
{
	return verify(c, true);
}

/* SPDX-License-Identifier: ISC */
/*
 * Digests: C_DigestInit, C_Digest, C_DigestUpdate, C_DigestKey and
 * C_DigestFinal with SHA-1, SHA-256, SHA-384 and SHA-512 (BearSSL). See
 * p11_token.h and docs/pkcs11.md.
 *
 * C_DigestKey hashes a secret key's value into the digest, as SoftHSM2
 * does for these hashes, sensitive or not: the hash of a key says
 * nothing of it a guess could not check against a ciphertext already. A
 * private key's value is never hashed (CKR_KEY_INDIGESTIBLE): it takes no
 * part in anything but its own operations.
 */
#include <string.h>

#include "wipe.h"
#include "p11_rsa.h"
#include "p11_token.h"

static const br_hash_class *digest_class(CK_MECHANISM_TYPE mech)
{
	switch (mech) {
	case CKM_SHA_1: return &br_sha1_vtable;
	case CKM_SHA256: return &br_sha256_vtable;
	case CKM_SHA384: return &br_sha384_vtable;
	case CKM_SHA512: return &br_sha512_vtable;
	default: return NULL;
	}
}

CK_RV p11_op_digest_init(struct p11_call *c)
{
	CK_MECHANISM_TYPE mech = wire_get_u64(c->r);
	struct wire_bytes param = p11_get_bytes(c->r, P11_ATTR_VALUE_MAX);
	CK_RV rv = p11_args_checked(c, true);
	if (rv != CKR_OK)
		return rv;
	struct p11_opstate *op = &c->s->op[P11_KIND_DIGEST];
	if (op->on)
		return CKR_OPERATION_ACTIVE;
	const br_hash_class *h = digest_class(mech);
	if (!h)
		return CKR_MECHANISM_INVALID;
	if (param.len)
		return CKR_MECHANISM_PARAM_INVALID;
	h->init(&op->u.h.vtable);
	op->on = true;
	op->mech = mech;
	return CKR_OK;
}

/* C_Digest (final false: the data comes with it) and C_DigestFinal. A
 * length query or a buffer too small keeps the operation. */
static CK_RV digest(struct p11_call *c, bool final)
{
	bool query = wire_get_u8(c->r) != 0;
	uint64_t room = wire_get_u64(c->r);
	struct wire_bytes data = { NULL, 0 };
	if (!final)
		data = p11_get_bytes(c->r, P11_DATA_MAX);
	CK_RV rv = p11_ongoing(c, P11_KIND_DIGEST);
	if (rv != CKR_OK)
		return rv;
	struct p11_opstate *op = &c->s->op[P11_KIND_DIGEST];
	if (c->r->bad || !wire_done(c->r))
		return p11_op_done(c, P11_KIND_DIGEST, CKR_ARGUMENTS_BAD);
	if (!final && op->updated)
		return p11_op_done(c, P11_KIND_DIGEST, CKR_OPERATION_ACTIVE);
	size_t len = p11_rsa_hash_len(op->mech);
	if (p11_length_only(c, query, room, len, &rv))
		return rv;
	if (!final)
		op->u.h.vtable->update(&op->u.h.vtable, data.p, data.len);
	wire_put_u64(c->w, len);
	uint8_t *out = wire_put_string_room(c->w, len);
	if (out)
		op->u.h.vtable->out(&op->u.h.vtable, out);
	return p11_op_done(c, P11_KIND_DIGEST, CKR_OK);
}

CK_RV p11_op_digest(struct p11_call *c)
{
	return digest(c, false);
}

CK_RV p11_op_digest_final(struct p11_call *c)
{
	return digest(c, true);
}

CK_RV p11_op_digest_update(struct p11_call *c)
{
	struct wire_bytes data = p11_get_bytes(c->r, P11_DATA_MAX);
	CK_RV rv = p11_ongoing(c, P11_KIND_DIGEST);
	if (rv != CKR_OK)
		return rv;
	struct p11_opstate *op = &c->s->op[P11_KIND_DIGEST];
	if (c->r->bad || !wire_done(c->r))
		return p11_op_done(c, P11_KIND_DIGEST, CKR_ARGUMENTS_BAD);
	op->u.h.vtable->update(&op->u.h.vtable, data.p, data.len);
	op->updated = true;
	return CKR_OK;
}

CK_RV p11_op_digest_key(struct p11_call *c)
{
	struct p11_object *k = p11_object(c, wire_get_u64(c->r));
	CK_RV rv = p11_ongoing(c, P11_KIND_DIGEST);
	if (rv != CKR_OK)
		return rv;
	struct p11_opstate *op = &c->s->op[P11_KIND_DIGEST];
	if (c->r->bad || !wire_done(c->r))
		return p11_op_done(c, P11_KIND_DIGEST, CKR_ARGUMENTS_BAD);
	if (!k)
		return p11_op_done(c, P11_KIND_DIGEST, CKR_KEY_HANDLE_INVALID);
	uint32_t len;
	const uint8_t *v = p11_obj_attr(k, CKA_VALUE, &len);
	if (p11_obj_ulong(k, CKA_CLASS, ~0ul) != CKO_SECRET_KEY || !v)
		return p11_op_done(c, P11_KIND_DIGEST, CKR_KEY_INDIGESTIBLE);
	op->u.h.vtable->update(&op->u.h.vtable, v, len);
	op->updated = true;
	return CKR_OK;
}

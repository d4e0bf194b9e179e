/* SPDX-License-Identifier: ISC */
/*
 * The token's objects and keys: creation (import), copies, destruction,
 * search, attributes, EC, Ed25519 and RSA key-pair generation and secret-key
 * generation. The rules that keep key values inside the guest are
 * p11_policy.c's; signing is p11_sign.c, encryption and decryption
 * p11_crypt.c. See p11_token.h.
 *
 * A private key is always sensitive, and extractable only under trusted
 * keys when made so; CKA_VALUE of a private key (an RSA key's private
 * exponent, primes, exponents, coefficient) and of a sensitive or
 * unextractable secret key is never returned (CKR_ATTRIBUTE_SENSITIVE)
 * nor matched by C_FindObjects.
 */
#include <string.h>

#include "wipe.h"
#include "p11_ec.h"
#include "p11_ed.h"
#include "p11_policy.h"
#include "p11_rsa.h"
#include "p11_token.h"

static const CK_BBOOL yes = CK_TRUE, no = CK_FALSE;

static bool is_bool_attr(uint64_t type)
{
	switch (type) {
	case CKA_TOKEN: case CKA_PRIVATE: case CKA_MODIFIABLE: case CKA_COPYABLE: case CKA_DESTROYABLE:
	case CKA_SENSITIVE: case CKA_EXTRACTABLE: case CKA_SIGN: case CKA_VERIFY: case CKA_DECRYPT:
	case CKA_ENCRYPT: case CKA_DERIVE: case CKA_WRAP: case CKA_UNWRAP: case CKA_SIGN_RECOVER:
	case CKA_VERIFY_RECOVER: case CKA_LOCAL: case CKA_ALWAYS_SENSITIVE: case CKA_NEVER_EXTRACTABLE:
	case CKA_ALWAYS_AUTHENTICATE: case CKA_WRAP_WITH_TRUSTED: case CKA_TRUSTED:
		return true;
	default:
		return false;
	}
}

static bool is_ulong_attr(uint64_t type)
{
	return type == CKA_CLASS || type == CKA_KEY_TYPE || type == CKA_CERTIFICATE_TYPE ||
	       type == CKA_KEY_GEN_MECHANISM || type == CKA_CERTIFICATE_CATEGORY || type == CKA_MODULUS_BITS ||
	       type == CKA_VALUE_LEN;
}

/* Checks one template attribute's form. */
static CK_RV attr_form(const struct p11_attr *a)
{
	if (a->type & CKF_ARRAY_ATTRIBUTE)
		return CKR_ATTRIBUTE_TYPE_INVALID;
	if ((is_bool_attr(a->type) && a->len != 1) || (is_ulong_attr(a->type) && a->len != sizeof(CK_ULONG)))
		return CKR_ATTRIBUTE_VALUE_INVALID;
	return CKR_OK;
}

/* Copies a template into an empty object, refusing what a caller may not
 * set and duplicates. */
CK_RV p11_object_apply(struct p11_object *o, const struct p11_template *t)
{
	for (uint32_t i = 0; i < t->n; i++) {
		const struct p11_attr *a = &t->a[i];
		uint32_t len;
		CK_RV rv = attr_form(a);
		if (rv != CKR_OK)
			return rv;
		if (p11_policy_token_set(a->type))
			return CKR_ATTRIBUTE_READ_ONLY;
		if (p11_obj_attr(o, a->type, &len))
			return CKR_TEMPLATE_INCONSISTENT;
		if (!p11_obj_set(o, a->type, a->value, a->len))
			return CKR_DEVICE_MEMORY;
	}
	return CKR_OK;
}

struct dflt {
	uint64_t type;
	const void *v;
	uint32_t len;
};
#define B(t, v) { t, &v, 1 }
#define EMPTY(t) { t, "", 0 }

static CK_RV put_defaults(struct p11_object *o, const struct dflt *d, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t len;
		if (!p11_obj_attr(o, d[i].type, &len) && !p11_obj_set(o, d[i].type, d[i].v, d[i].len))
			return CKR_DEVICE_MEMORY;
	}
	return CKR_OK;
}

static CK_RV set_ulong(struct p11_object *o, uint64_t type, CK_ULONG v)
{
	return p11_obj_set(o, type, &v, sizeof v) ? CKR_OK : CKR_DEVICE_MEMORY;
}

/* Defaults where a template says nothing; p11_policy_new_key has set
 * the attributes that keep values in (sensitive, extractable, ...). */
static const struct dflt common_dflt[] = {
	B(CKA_TOKEN, no), B(CKA_MODIFIABLE, yes), B(CKA_COPYABLE, yes), B(CKA_DESTROYABLE, yes),
	EMPTY(CKA_LABEL),
};
static const struct dflt key_dflt[] = {
	EMPTY(CKA_ID), EMPTY(CKA_START_DATE), EMPTY(CKA_END_DATE), B(CKA_DERIVE, no),
};
static const struct dflt priv_dflt[] = {
	B(CKA_PRIVATE, yes), B(CKA_SIGN, yes), B(CKA_SIGN_RECOVER, no), B(CKA_ALWAYS_AUTHENTICATE, no),
	EMPTY(CKA_SUBJECT),
};
static const struct dflt pub_dflt[] = {
	B(CKA_PRIVATE, no), B(CKA_VERIFY, yes), B(CKA_ENCRYPT, no), B(CKA_WRAP, no),
	B(CKA_VERIFY_RECOVER, no), EMPTY(CKA_SUBJECT),
};
static const struct dflt secret_dflt[] = {
	B(CKA_PRIVATE, yes), B(CKA_ENCRYPT, yes), B(CKA_SIGN, yes), B(CKA_VERIFY, yes), B(CKA_WRAP, no),
};
static const struct dflt cert_dflt[] = {
	B(CKA_PRIVATE, no), B(CKA_TRUSTED, no), EMPTY(CKA_ID), EMPTY(CKA_SUBJECT), EMPTY(CKA_ISSUER),
	EMPTY(CKA_SERIAL_NUMBER),
};
static const struct dflt data_dflt[] = { B(CKA_PRIVATE, yes), EMPTY(CKA_APPLICATION), EMPTY(CKA_VALUE) };
#define PUT(o, d) put_defaults(o, d, sizeof d / sizeof d[0])

const struct p11_curve *p11_curve_of(const struct p11_object *o)
{
	uint32_t len;
	const uint8_t *p = p11_obj_attr(o, CKA_EC_PARAMS, &len);
	return p ? p11_ec_curve(p, len) : NULL;
}

/* Stores a key's parts (a public key's two, a private key's eight) and,
 * on a public key, CKA_MODULUS_BITS. */
static CK_RV rsa_store(struct p11_object *o, const struct p11_rsa_key *k, bool priv)
{
	for (int i = 0; i < (priv ? P11_RSA_PARTS : P11_RSA_PUB_PARTS); i++)
		if (!p11_obj_set(o, p11_rsa_attr[i], k->v[i], (uint32_t)k->len[i]))
			return CKR_DEVICE_MEMORY;
	return priv ? CKR_OK : set_ulong(o, CKA_MODULUS_BITS, p11_rsa_bits(k));
}

/* An imported RSA key: checked, completed and stored in its canonical
 * form. A CKA_MODULUS_BITS given with a public key must be right. */
static CK_RV rsa_import(struct p11_object *o, bool priv)
{
	struct p11_rsa_key in, out;
	uint8_t buf[P11_RSA_BUF];
	uint32_t len;
	p11_rsa_view(o, &in);
	if (!in.v[P11_RSA_N] || !in.v[P11_RSA_PUBEXP] ||
	    (priv && !in.v[P11_RSA_D] && (!in.v[P11_RSA_P] || !in.v[P11_RSA_Q])))
		return CKR_TEMPLATE_INCOMPLETE;
	unsigned long given = p11_obj_attr(o, CKA_MODULUS_BITS, &len) ? p11_obj_ulong(o, CKA_MODULUS_BITS, 0) : 0;
	unsigned bits = p11_rsa_import(&in, priv, buf, &out);
	CK_RV rv = !bits ? CKR_ATTRIBUTE_VALUE_INVALID
		   : given && given != bits ? CKR_TEMPLATE_INCONSISTENT : rsa_store(o, &out, priv);
	wipe(buf, sizeof buf);
	return rv;
}

/* An EC key's curve and values: a public key's point checked, an
 * imported private key's scalar checked and kept at full length with its
 * public point beside it. */
static CK_RV ec_finish(struct p11_object *o, CK_OBJECT_CLASS cls, enum p11_origin origin)
{
	uint32_t len;
	const struct p11_curve *curve = p11_curve_of(o);
	if (!p11_obj_attr(o, CKA_EC_PARAMS, &len))
		return CKR_TEMPLATE_INCOMPLETE;
	if (!curve)
		return CKR_CURVE_NOT_SUPPORTED;
	if (cls == CKO_PUBLIC_KEY) {
		const uint8_t *pt = p11_obj_attr(o, CKA_EC_POINT, &len);
		if (!pt)
			return CKR_TEMPLATE_INCOMPLETE;
		if (len != 3 + 2 * curve->scalar || pt[0] != 0x04 || pt[1] != len - 2 || pt[2] != 0x04)
			return CKR_ATTRIBUTE_VALUE_INVALID;
		return CKR_OK;
	}
	if (origin == P11_GENERATED)
		return CKR_OK;
	const uint8_t *v = p11_obj_attr(o, CKA_VALUE, &len);
	if (!v)
		return CKR_TEMPLATE_INCOMPLETE;
	uint8_t d[P11_EC_SCALAR_MAX], pt[P11_EC_POINT_DER_MAX];
	size_t ptlen = 0;
	bool ok = p11_ec_scalar(curve, v, len, d);
	if (ok)
		ok = (ptlen = p11_ec_public(curve, d, pt)) != 0;
	/* Kept at its full length; the public point beside it. */
	if (ok && !p11_obj_set(o, CKA_VALUE, d, (uint32_t)curve->scalar))
		ok = false;
	wipe(d, sizeof d);
	if (!ok)
		return CKR_ATTRIBUTE_VALUE_INVALID;
	return p11_obj_set(o, CKA_EC_POINT, pt, (uint32_t)ptlen) ? CKR_OK : CKR_DEVICE_MEMORY;
}

/* An Ed25519 key (p11_ed.h): a public key's point checked; an imported
 * private key's seed (CKA_VALUE, 32 bytes) with its public key beside
 * it, as ec_finish keeps an EC key's. */
static CK_RV ed_finish(struct p11_object *o, CK_OBJECT_CLASS cls, enum p11_origin origin)
{
	uint32_t len;
	if (!p11_obj_attr(o, CKA_EC_PARAMS, &len))
		return CKR_TEMPLATE_INCOMPLETE;
	if (!p11_ed_key(o))
		return CKR_CURVE_NOT_SUPPORTED;
	if (cls == CKO_PUBLIC_KEY) {
		const uint8_t *pt = p11_obj_attr(o, CKA_EC_POINT, &len);
		if (!pt)
			return CKR_TEMPLATE_INCOMPLETE;
		return p11_ed_point(pt, len) ? CKR_OK : CKR_ATTRIBUTE_VALUE_INVALID;
	}
	if (origin == P11_GENERATED)
		return CKR_OK;
	const uint8_t *v = p11_obj_attr(o, CKA_VALUE, &len);
	if (!v)
		return CKR_TEMPLATE_INCOMPLETE;
	if (len != P11_ED_KEY)
		return CKR_ATTRIBUTE_VALUE_INVALID;
	uint8_t pt[P11_ED_POINT_DER];
	p11_ed_public(v, pt);
	return p11_obj_set(o, CKA_EC_POINT, pt, sizeof pt) ? CKR_OK : CKR_DEVICE_MEMORY;
}

bool p11_secret_len_ok(CK_KEY_TYPE kt, size_t len)
{
	if (kt == CKK_AES)
		return len == 16 || len == 24 || len == 32;
	return kt == CKK_GENERIC_SECRET && len >= 1 && len <= P11_SECRET_MAX;
}

/* A secret key: an AES key of 16, 24 or 32 bytes, or a generic secret
 * (HMAC keys, ECDH's shared secrets) of 1 to P11_SECRET_MAX. Its
 * CKA_VALUE_LEN is the token's to set from the value, and a template
 * that names one names the value's length (C_CreateObject takes none). */
static CK_RV secret_finish(struct p11_object *o, enum p11_origin origin)
{
	uint32_t len, vlen;
	if (!p11_obj_attr(o, CKA_KEY_TYPE, &len))
		return CKR_TEMPLATE_INCOMPLETE;
	CK_KEY_TYPE kt = p11_obj_ulong(o, CKA_KEY_TYPE, ~0ul);
	if (kt != CKK_AES && kt != CKK_GENERIC_SECRET)
		return CKR_ATTRIBUTE_VALUE_INVALID;
	if (!p11_obj_attr(o, CKA_VALUE, &vlen))
		return CKR_TEMPLATE_INCOMPLETE;
	if (!p11_secret_len_ok(kt, vlen))
		return CKR_ATTRIBUTE_VALUE_INVALID;
	if (p11_obj_attr(o, CKA_VALUE_LEN, &len)) {
		if (origin == P11_IMPORTED)
			return CKR_TEMPLATE_INCONSISTENT;
		if (p11_obj_ulong(o, CKA_VALUE_LEN, 0) != vlen)
			return CKR_TEMPLATE_INCONSISTENT;
	}
	return set_ulong(o, CKA_VALUE_LEN, vlen);
}

CK_RV p11_object_finish(struct p11_call *c, struct p11_object *o, enum p11_origin origin,
			const struct p11_object *base)
{
	CK_RV rv;
	uint32_t len;
	if (!p11_obj_attr(o, CKA_CLASS, &len))
		return CKR_TEMPLATE_INCOMPLETE;
	CK_OBJECT_CLASS cls = p11_obj_ulong(o, CKA_CLASS, ~0ul);
	if ((rv = PUT(o, common_dflt)) != CKR_OK)
		return rv;
	switch (cls) {
	case CKO_PRIVATE_KEY:
	case CKO_PUBLIC_KEY: {
		CK_KEY_TYPE kt = p11_obj_ulong(o, CKA_KEY_TYPE, CKK_EC);
		if (kt != CKK_EC && kt != CKK_EC_EDWARDS && kt != CKK_RSA)
			return CKR_ATTRIBUTE_VALUE_INVALID;
		if ((rv = set_ulong(o, CKA_KEY_TYPE, kt)) != CKR_OK ||
		    (rv = p11_policy_new_key(o, origin, c->app->login, base)) != CKR_OK ||
		    (rv = PUT(o, key_dflt)) != CKR_OK)
			return rv;
		if ((rv = cls == CKO_PUBLIC_KEY ? PUT(o, pub_dflt) : PUT(o, priv_dflt)) != CKR_OK)
			return rv;
		if (kt == CKK_RSA)
			rv = origin == P11_GENERATED ? CKR_OK : rsa_import(o, cls == CKO_PRIVATE_KEY);
		else if (kt == CKK_EC_EDWARDS)
			rv = ed_finish(o, cls, origin);
		else
			rv = ec_finish(o, cls, origin);
		if (rv != CKR_OK)
			return rv;
		break;
	}
	case CKO_SECRET_KEY:
		if ((rv = secret_finish(o, origin)) != CKR_OK ||
		    (rv = p11_policy_new_key(o, origin, c->app->login, base)) != CKR_OK ||
		    (rv = PUT(o, key_dflt)) != CKR_OK || (rv = PUT(o, secret_dflt)) != CKR_OK)
			return rv;
		break;
	case CKO_CERTIFICATE:
		if (p11_obj_ulong(o, CKA_CERTIFICATE_TYPE, CKC_X_509) != CKC_X_509)
			return CKR_ATTRIBUTE_VALUE_INVALID;
		if (!p11_obj_attr(o, CKA_VALUE, &len))
			return CKR_TEMPLATE_INCOMPLETE;
		if ((rv = set_ulong(o, CKA_CERTIFICATE_TYPE, CKC_X_509)) != CKR_OK ||
		    (rv = p11_policy_new_key(o, origin, c->app->login, base)) != CKR_OK ||
		    (rv = PUT(o, cert_dflt)) != CKR_OK)
			return rv;
		break;
	case CKO_DATA:
		if ((rv = PUT(o, data_dflt)) != CKR_OK)
			return rv;
		break;
	default:
		return CKR_ATTRIBUTE_VALUE_INVALID;
	}
	if (p11_obj_bool(o, CKA_TOKEN, false) && !c->s->rw)
		return CKR_SESSION_READ_ONLY;
	if (p11_obj_bool(o, CKA_PRIVATE, true) && c->app->login != CKU_USER)
		return CKR_USER_NOT_LOGGED_IN;
	o->session = p11_obj_bool(o, CKA_TOKEN, false) ? 0 : c->s->handle;
	return CKR_OK;
}

CK_RV p11_op_create(struct p11_call *c)
{
	struct p11_template t;
	CK_RV rv = p11_get_last_template(c, &t);
	if (rv != CKR_OK)
		return rv;
	struct p11_object *o = p11_objects_new(&c->t->objects, 0);
	if (!o)
		return CKR_DEVICE_MEMORY;
	rv = p11_object_apply(o, &t);
	if (rv == CKR_OK)
		rv = p11_object_finish(c, o, P11_IMPORTED, NULL);
	if (rv != CKR_OK) {
		p11_objects_free(o);
		return rv;
	}
	wire_put_u64(c->w, o->handle);
	return CKR_OK;
}

struct p11_object *p11_object(struct p11_call *c, uint64_t handle)
{
	struct p11_object *o = p11_objects_get(&c->t->objects, handle);
	return o && p11_visible(c, o) ? o : NULL;
}

CK_RV p11_key_usable(const struct p11_object *k, CK_OBJECT_CLASS cls, CK_KEY_TYPE kt, CK_ATTRIBUTE_TYPE usage)
{
	if (!k)
		return CKR_KEY_HANDLE_INVALID;
	if (p11_obj_ulong(k, CKA_CLASS, ~0ul) != cls || p11_obj_ulong(k, CKA_KEY_TYPE, ~0ul) != kt ||
	    (kt == CKK_EC && !p11_curve_of(k)) || (kt == CKK_EC_EDWARDS && !p11_ed_key(k)))
		return CKR_KEY_TYPE_INCONSISTENT;
	return p11_obj_bool(k, usage, false) ? CKR_OK : CKR_KEY_FUNCTION_NOT_PERMITTED;
}

/* Whether session s may change object o as far as attribute perm
 * (CKA_DESTROYABLE, CKA_MODIFIABLE) allows: CKR_OBJECT_HANDLE_INVALID,
 * CKR_SESSION_READ_ONLY (a token object from a read-only session),
 * CKR_ACTION_PROHIBITED, or CKR_OK. */
static CK_RV may_change(const struct p11_session *s, const struct p11_object *o, uint64_t perm)
{
	if (!o)
		return CKR_OBJECT_HANDLE_INVALID;
	if (!o->session && !s->rw)
		return CKR_SESSION_READ_ONLY;
	return p11_obj_bool(o, perm, true) ? CKR_OK : CKR_ACTION_PROHIBITED;
}

CK_RV p11_op_destroy(struct p11_call *c)
{
	struct p11_object *o = p11_object(c, wire_get_u64(c->r));
	if (!c->s)
		return CKR_SESSION_HANDLE_INVALID;
	CK_RV rv = may_change(c->s, o, CKA_DESTROYABLE);
	if (rv == CKR_OK)
		p11_objects_free(o);
	return rv;
}

CK_RV p11_op_get_attrs(struct p11_call *c)
{
	struct p11_object *o = p11_object(c, wire_get_u64(c->r));
	uint32_t n = wire_get_u32(c->r);
	if (n > P11_ATTRS_MAX)
		return CKR_ARGUMENTS_BAD;
	CK_RV rv = p11_args_checked(c, false);
	if (rv != CKR_OK)
		return rv;
	if (!o)
		return CKR_OBJECT_HANDLE_INVALID;
	wire_put_u32(c->w, n);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t type = wire_get_u64(c->r), room = wire_get_u64(c->r);
		uint32_t len;
		const uint8_t *v = p11_obj_attr(o, type, &len);
		CK_RV why = !v ? CKR_ATTRIBUTE_TYPE_INVALID
			    : !p11_policy_readable(o, type) ? CKR_ATTRIBUTE_SENSITIVE
			    : room != P11_NO_BUFFER && room < len ? CKR_BUFFER_TOO_SMALL : CKR_OK;
		/* Of several failures, any one may be returned (PKCS#11 2.40). */
		if (why != CKR_OK)
			rv = why;
		wire_put_u64(c->w, why != CKR_OK ? CK_UNAVAILABLE_INFORMATION : len);
		wire_put_string(c->w, v, why == CKR_OK && room != P11_NO_BUFFER ? len : 0);
	}
	if (c->r->bad)
		return CKR_ARGUMENTS_BAD;
	return rv;
}

CK_RV p11_op_set_attrs(struct p11_call *c)
{
	struct p11_object *o = p11_object(c, wire_get_u64(c->r));
	struct p11_template t;
	CK_RV rv = p11_get_last_template(c, &t);
	if (rv == CKR_OK)
		rv = may_change(c->s, o, CKA_MODIFIABLE);
	if (rv != CKR_OK)
		return rv;
	/* All or nothing: built on a copy, which then replaces the object. */
	struct p11_object *n = &c->t->scratch;
	memcpy(n, o, sizeof *n);
	for (uint32_t i = 0; i < t.n && rv == CKR_OK; i++) {
		const struct p11_attr *a = &t.a[i];
		rv = attr_form(a);
		if (rv == CKR_OK)
			rv = p11_policy_set(n, a, c->app->login, false);
		if (rv == CKR_OK && !p11_obj_set(n, a->type, a->value, a->len))
			rv = CKR_DEVICE_MEMORY;
	}
	if (rv == CKR_OK)
		rv = p11_policy_check(n);
	if (rv == CKR_OK)
		memcpy(o, n, sizeof *o);
	wipe(n, sizeof *n);
	return rv;
}

/* C_CopyObject: the object's attributes, then the template's changes
 * as C_SetAttributeValue would make them, and CKA_TOKEN and CKA_PRIVATE
 * (never less private); the token-set ones stay as they were. */
CK_RV p11_op_copy(struct p11_call *c)
{
	struct p11_object *o = p11_object(c, wire_get_u64(c->r));
	struct p11_template t;
	CK_RV rv = p11_get_last_template(c, &t);
	if (rv != CKR_OK)
		return rv;
	if (!o)
		return CKR_OBJECT_HANDLE_INVALID;
	if (!p11_obj_bool(o, CKA_COPYABLE, true))
		return CKR_ACTION_PROHIBITED;
	struct p11_object *n = p11_objects_new(&c->t->objects, 0);
	if (!n)
		return CKR_DEVICE_MEMORY;
	uint32_t handle = n->handle;
	memcpy(n, o, sizeof *n);
	n->handle = handle;
	for (uint32_t i = 0; i < t.n && rv == CKR_OK; i++) {
		const struct p11_attr *a = &t.a[i];
		rv = attr_form(a);
		if (rv == CKR_OK)
			rv = p11_policy_set(n, a, c->app->login, true);
		if (rv == CKR_OK && !p11_obj_set(n, a->type, a->value, a->len))
			rv = CKR_DEVICE_MEMORY;
	}
	if (rv == CKR_OK)
		rv = p11_policy_check(n);
	if (rv == CKR_OK && p11_obj_bool(n, CKA_TOKEN, false) && !c->s->rw)
		rv = CKR_SESSION_READ_ONLY;
	if (rv == CKR_OK && p11_obj_bool(n, CKA_PRIVATE, true) && c->app->login != CKU_USER)
		rv = CKR_USER_NOT_LOGGED_IN;
	if (rv != CKR_OK) {
		p11_objects_free(n);
		return rv;
	}
	n->session = p11_obj_bool(n, CKA_TOKEN, false) ? 0 : c->s->handle;
	wire_put_u64(c->w, n->handle);
	return CKR_OK;
}

/* C_GetObjectSize: the bytes the object takes in the token's store (its
 * attributes as the blob keeps them: type, length, value). */
CK_RV p11_op_object_size(struct p11_call *c)
{
	struct p11_object *o = p11_object(c, wire_get_u64(c->r));
	CK_RV rv = p11_args_checked(c, true);
	if (rv != CKR_OK)
		return rv;
	if (!o)
		return CKR_OBJECT_HANDLE_INVALID;
	wire_put_u64(c->w, 8 + (uint64_t)o->nattr * 12 + o->used);
	return CKR_OK;
}

static bool matches(const struct p11_object *o, const struct p11_template *t)
{
	for (uint32_t i = 0; i < t->n; i++) {
		uint32_t len;
		const uint8_t *v = p11_obj_attr(o, t->a[i].type, &len);
		if (!v || !p11_policy_readable(o, t->a[i].type) || len != t->a[i].len || memcmp(v, t->a[i].value, len))
			return false;
	}
	return true;
}

CK_RV p11_op_find_init(struct p11_call *c)
{
	struct p11_session *s = c->s;
	struct p11_template t;
	CK_RV rv = p11_get_last_template(c, &t);
	if (rv != CKR_OK)
		return rv;
	if (s->finding)
		return CKR_OPERATION_ACTIVE;
	s->nfound = s->pos = 0;
	for (unsigned i = 0; i < P11_OBJECTS_MAX; i++) {
		const struct p11_object *o = &c->t->objects.o[i];
		if (o->handle && p11_visible(c, o) && matches(o, &t))
			s->found[s->nfound++] = o->handle;
	}
	s->finding = true;
	return CKR_OK;
}

CK_RV p11_op_find(struct p11_call *c)
{
	struct p11_session *s = c->s;
	uint32_t max = wire_get_u32(c->r);
	if (!s)
		return CKR_SESSION_HANDLE_INVALID;
	if (!s->finding)
		return CKR_OPERATION_NOT_INITIALIZED;
	uint32_t n = s->nfound - s->pos;
	if (n > max)
		n = max;
	if (n > P11_FIND_MAX)
		n = P11_FIND_MAX;
	wire_put_u32(c->w, n);
	for (uint32_t i = 0; i < n; i++)
		wire_put_u64(c->w, s->found[s->pos++]);
	return CKR_OK;
}

CK_RV p11_op_find_final(struct p11_call *c)
{
	struct p11_session *s = c->s;
	if (!s)
		return CKR_SESSION_HANDLE_INVALID;
	if (!s->finding)
		return CKR_OPERATION_NOT_INITIALIZED;
	s->finding = false;
	return CKR_OK;
}

/* ---- key generation */

static const struct p11_curve *template_curve(const struct p11_template *pub, const struct p11_template *priv)
{
	for (int k = 0; k < 2; k++) {
		const struct p11_template *t = k ? priv : pub;
		for (uint32_t i = 0; i < t->n; i++)
			if (t->a[i].type == CKA_EC_PARAMS)
				return p11_ec_curve(t->a[i].value, t->a[i].len);
	}
	return NULL;
}

bool p11_template_has(const struct p11_template *t, uint64_t type)
{
	for (uint32_t i = 0; i < t->n; i++)
		if (t->a[i].type == type)
			return true;
	return false;
}

/* The end of a key-pair generation: on failure both halves go (either
 * may be NULL: not made); on success their handles are the reply. */
static CK_RV pair_result(struct p11_call *c, CK_RV rv, struct p11_object *po, struct p11_object *ko)
{
	if (rv != CKR_OK) {
		if (po)
			p11_objects_free(po);
		if (ko)
			p11_objects_free(ko);
		return rv;
	}
	wire_put_u64(c->w, po->handle);
	wire_put_u64(c->w, ko->handle);
	return CKR_OK;
}

/* A generated EC or Ed25519 key pair, as both halves take it: its key
 * type and mechanism, the CKA_EC_PARAMS where a template names none, its
 * curve (EC) and its values. */
struct genpair {
	CK_KEY_TYPE kt;
	CK_MECHANISM_TYPE mech;
	const uint8_t *params;
	size_t params_len;
	const struct p11_curve *curve; /* EC; NULL: Ed25519 */
	const uint8_t *d, *pt;
	size_t dlen, ptlen;
};

/* One generated half: template, then class, key type, curve and
 * generated values. */
static CK_RV generated(struct p11_call *c, struct p11_object *o, const struct p11_template *t, CK_OBJECT_CLASS cls,
		       const struct genpair *g)
{
	CK_RV rv = p11_object_apply(o, t);
	if (rv != CKR_OK)
		return rv;
	if (p11_obj_ulong(o, CKA_CLASS, cls) != cls || p11_obj_ulong(o, CKA_KEY_TYPE, g->kt) != g->kt ||
	    p11_template_has(t, CKA_VALUE) || p11_template_has(t, CKA_EC_POINT))
		return CKR_TEMPLATE_INCONSISTENT;
	if ((rv = set_ulong(o, CKA_CLASS, cls)) != CKR_OK || (rv = set_ulong(o, CKA_KEY_TYPE, g->kt)) != CKR_OK ||
	    (rv = set_ulong(o, CKA_KEY_GEN_MECHANISM, g->mech)) != CKR_OK)
		return rv;
	if (!p11_template_has(t, CKA_EC_PARAMS) && !p11_obj_set(o, CKA_EC_PARAMS, g->params, (uint32_t)g->params_len))
		return CKR_DEVICE_MEMORY;
	if (g->curve ? p11_curve_of(o) != g->curve : !p11_ed_key(o))
		return CKR_TEMPLATE_INCONSISTENT;
	if (!p11_obj_set(o, CKA_EC_POINT, g->pt, (uint32_t)g->ptlen))
		return CKR_DEVICE_MEMORY;
	if (cls == CKO_PRIVATE_KEY && !p11_obj_set(o, CKA_VALUE, g->d, (uint32_t)g->dlen))
		return CKR_DEVICE_MEMORY;
	return p11_object_finish(c, o, P11_GENERATED, NULL);
}

/* Both halves of a generated EC or Ed25519 pair, then the reply. */
static CK_RV ec_pair(struct p11_call *c, const struct p11_template *pub, const struct p11_template *priv,
		     const struct genpair *g)
{
	struct p11_object *po = p11_objects_new(&c->t->objects, 0);
	struct p11_object *ko = p11_objects_new(&c->t->objects, 0);
	CK_RV rv = po && ko ? CKR_OK : CKR_DEVICE_MEMORY;
	if (rv == CKR_OK)
		rv = generated(c, po, pub, CKO_PUBLIC_KEY, g);
	if (rv == CKR_OK)
		rv = generated(c, ko, priv, CKO_PRIVATE_KEY, g);
	return pair_result(c, rv, po, ko);
}

/* One generated half of an RSA key pair: template, then class, key
 * type and the generated parts. */
static CK_RV rsa_generated(struct p11_call *c, struct p11_session *s, struct p11_object *o,
			   const struct p11_template *t, CK_OBJECT_CLASS cls, const struct p11_rsa_key *k)
{
	CK_RV rv = p11_object_apply(o, t);
	if (rv != CKR_OK)
		return rv;
	if (p11_obj_ulong(o, CKA_CLASS, cls) != cls || p11_obj_ulong(o, CKA_KEY_TYPE, CKK_RSA) != CKK_RSA ||
	    p11_template_has(t, CKA_MODULUS) || p11_template_has(t, CKA_PRIVATE_EXPONENT) || p11_template_has(t, CKA_VALUE))
		return CKR_TEMPLATE_INCONSISTENT;
	for (int i = P11_RSA_P; i < P11_RSA_PARTS; i++)
		if (p11_template_has(t, p11_rsa_attr[i]))
			return CKR_TEMPLATE_INCONSISTENT;
	if ((rv = set_ulong(o, CKA_CLASS, cls)) != CKR_OK || (rv = set_ulong(o, CKA_KEY_TYPE, CKK_RSA)) != CKR_OK ||
	    (rv = set_ulong(o, CKA_KEY_GEN_MECHANISM, CKM_RSA_PKCS_KEY_PAIR_GEN)) != CKR_OK ||
	    (rv = rsa_store(o, k, cls == CKO_PRIVATE_KEY)) != CKR_OK)
		return rv;
	return p11_object_finish(c, o, P11_GENERATED, NULL);
}

/* CKM_RSA_PKCS_KEY_PAIR_GEN: CKA_MODULUS_BITS from the public template;
 * CKA_PUBLIC_EXPONENT, if given, must be 65537. */
static CK_RV rsa_keygen(struct p11_call *c, struct p11_session *s, const struct p11_template *pub,
			const struct p11_template *priv)
{
	static const uint8_t f4[] = { 0x01, 0x00, 0x01 };
	CK_ULONG bits = 0;
	for (uint32_t i = 0; i < pub->n; i++) {
		const struct p11_attr *a = &pub->a[i];
		if (a->type == CKA_MODULUS_BITS && a->len == sizeof bits)
			memcpy(&bits, a->value, sizeof bits);
		if (a->type == CKA_PUBLIC_EXPONENT) {
			uint32_t n = a->len, z = 0;
			while (z < n && !a->value[z])
				z++;
			if (n - z != sizeof f4 || memcmp(a->value + z, f4, sizeof f4))
				return CKR_TEMPLATE_INCONSISTENT;
		}
	}
	if (!p11_template_has(pub, CKA_MODULUS_BITS))
		return CKR_TEMPLATE_INCOMPLETE;
	if (bits < P11_RSA_BITS_MIN || bits > P11_RSA_BITS_MAX || bits % 8)
		return CKR_KEY_SIZE_RANGE;
	br_hmac_drbg_context drbg;
	if (!c->t->env->seed(c->t->env->ctx, &drbg))
		return CKR_DEVICE_ERROR;
	uint8_t buf[P11_RSA_BUF];
	struct p11_rsa_key k;
	bool ok = p11_rsa_keygen(&drbg, (unsigned)bits, buf, &k);
	wipe(&drbg, sizeof drbg);
	struct p11_object *po = ok ? p11_objects_new(&c->t->objects, 0) : NULL;
	struct p11_object *ko = ok ? p11_objects_new(&c->t->objects, 0) : NULL;
	CK_RV rv = !ok ? CKR_DEVICE_ERROR : po && ko ? CKR_OK : CKR_DEVICE_MEMORY;
	if (rv == CKR_OK)
		rv = rsa_generated(c, s, po, pub, CKO_PUBLIC_KEY, &k);
	if (rv == CKR_OK)
		rv = rsa_generated(c, s, ko, priv, CKO_PRIVATE_KEY, &k);
	wipe(buf, sizeof buf);
	return pair_result(c, rv, po, ko);
}

/* CKM_EC_EDWARDS_KEY_PAIR_GEN: a template must name Ed25519 (either
 * CKA_EC_PARAMS form, p11_ed.h; SoftHSM2 wants one too); its seed comes
 * from the guest's own entropy, the public key from libsodium. */
static CK_RV ed_keygen(struct p11_call *c, const struct p11_template *pub, const struct p11_template *priv)
{
	const struct p11_attr *named = NULL;
	for (int k = 0; k < 2; k++) {
		const struct p11_template *t = k ? priv : pub;
		for (uint32_t i = 0; i < t->n; i++)
			if (t->a[i].type == CKA_EC_PARAMS) {
				if (!p11_ed_params(t->a[i].value, t->a[i].len))
					return CKR_CURVE_NOT_SUPPORTED;
				if (!named)
					named = &t->a[i];
			}
	}
	if (!named)
		return CKR_TEMPLATE_INCOMPLETE;
	br_hmac_drbg_context drbg;
	if (!c->t->env->seed(c->t->env->ctx, &drbg))
		return CKR_DEVICE_ERROR;
	uint8_t seed[P11_ED_KEY], pt[P11_ED_POINT_DER];
	br_hmac_drbg_generate(&drbg, seed, sizeof seed);
	wipe(&drbg, sizeof drbg);
	p11_ed_public(seed, pt);
	/* The half whose template names no curve gets the other's form of
	 * the name, as SoftHSM2 gives it. */
	struct genpair g = { CKK_EC_EDWARDS, CKM_EC_EDWARDS_KEY_PAIR_GEN, named->value, named->len, NULL,
			     seed, pt, sizeof seed, sizeof pt };
	CK_RV rv = ec_pair(c, pub, priv, &g);
	wipe(seed, sizeof seed);
	return rv;
}

CK_RV p11_op_keygen(struct p11_call *c)
{
	struct p11_session *s = c->s;
	CK_MECHANISM_TYPE mech = wire_get_u64(c->r);
	struct wire_bytes param = p11_get_bytes(c->r, P11_ATTR_VALUE_MAX);
	struct p11_template pub, priv;
	p11_get_template(c->r, &pub);
	p11_get_template(c->r, &priv);
	CK_RV rv = p11_args_checked(c, true);
	if (rv != CKR_OK)
		return rv;
	if (mech != CKM_EC_KEY_PAIR_GEN && mech != CKM_EC_EDWARDS_KEY_PAIR_GEN && mech != CKM_RSA_PKCS_KEY_PAIR_GEN)
		return CKR_MECHANISM_INVALID;
	if (param.len)
		return CKR_MECHANISM_PARAM_INVALID;
	if (mech == CKM_RSA_PKCS_KEY_PAIR_GEN)
		return rsa_keygen(c, s, &pub, &priv);
	if (mech == CKM_EC_EDWARDS_KEY_PAIR_GEN)
		return ed_keygen(c, &pub, &priv);
	const struct p11_curve *curve = template_curve(&pub, &priv);
	if (!curve)
		return p11_template_has(&pub, CKA_EC_PARAMS) || p11_template_has(&priv, CKA_EC_PARAMS) ? CKR_CURVE_NOT_SUPPORTED
										: CKR_TEMPLATE_INCOMPLETE;
	br_hmac_drbg_context drbg;
	if (!c->t->env->seed(c->t->env->ctx, &drbg))
		return CKR_DEVICE_ERROR;
	uint8_t d[P11_EC_SCALAR_MAX], pt[P11_EC_POINT_DER_MAX];
	size_t ptlen = p11_ec_keygen(curve, &drbg.vtable, d, pt);
	wipe(&drbg, sizeof drbg);
	if (!ptlen)
		return CKR_DEVICE_ERROR;
	struct genpair g = { CKK_EC, CKM_EC_KEY_PAIR_GEN, curve->oid, curve->oid_len, curve, d, pt, curve->scalar, ptlen };
	rv = ec_pair(c, &pub, &priv, &g);
	wipe(d, sizeof d);
	return rv;
}

/* ---- secret-key generation */

/* C_GenerateKey: CKM_AES_KEY_GEN or CKM_GENERIC_SECRET_KEY_GEN, the
 * length from the template's CKA_VALUE_LEN, the value from the guest's
 * own entropy. */
CK_RV p11_op_generate_key(struct p11_call *c)
{
	CK_MECHANISM_TYPE mech = wire_get_u64(c->r);
	struct wire_bytes param = p11_get_bytes(c->r, P11_ATTR_VALUE_MAX);
	struct p11_template t;
	CK_RV rv = p11_get_last_template(c, &t);
	if (rv != CKR_OK)
		return rv;
	if (mech != CKM_AES_KEY_GEN && mech != CKM_GENERIC_SECRET_KEY_GEN)
		return CKR_MECHANISM_INVALID;
	if (param.len)
		return CKR_MECHANISM_PARAM_INVALID;
	CK_KEY_TYPE kt = mech == CKM_AES_KEY_GEN ? CKK_AES : CKK_GENERIC_SECRET;
	struct p11_object *o = p11_objects_new(&c->t->objects, 0);
	if (!o)
		return CKR_DEVICE_MEMORY;
	uint32_t len;
	rv = p11_object_apply(o, &t);
	CK_ULONG vlen = p11_obj_ulong(o, CKA_VALUE_LEN, 0);
	if (rv == CKR_OK && (p11_obj_ulong(o, CKA_CLASS, CKO_SECRET_KEY) != CKO_SECRET_KEY ||
			     p11_obj_ulong(o, CKA_KEY_TYPE, kt) != kt || p11_template_has(&t, CKA_VALUE)))
		rv = CKR_TEMPLATE_INCONSISTENT;
	if (rv == CKR_OK && !p11_obj_attr(o, CKA_VALUE_LEN, &len))
		rv = CKR_TEMPLATE_INCOMPLETE;
	if (rv == CKR_OK && !p11_secret_len_ok(kt, vlen))
		rv = CKR_ATTRIBUTE_VALUE_INVALID;
	br_hmac_drbg_context drbg;
	uint8_t v[P11_SECRET_MAX];
	if (rv == CKR_OK && !c->t->env->seed(c->t->env->ctx, &drbg))
		rv = CKR_DEVICE_ERROR;
	if (rv == CKR_OK) {
		br_hmac_drbg_generate(&drbg, v, vlen);
		if ((rv = set_ulong(o, CKA_CLASS, CKO_SECRET_KEY)) == CKR_OK &&
		    (rv = set_ulong(o, CKA_KEY_TYPE, kt)) == CKR_OK &&
		    (rv = set_ulong(o, CKA_KEY_GEN_MECHANISM, mech)) == CKR_OK)
			rv = p11_obj_set(o, CKA_VALUE, v, (uint32_t)vlen) ? CKR_OK : CKR_DEVICE_MEMORY;
	}
	wipe(&drbg, sizeof drbg);
	wipe(v, sizeof v);
	if (rv == CKR_OK)
		rv = p11_object_finish(c, o, P11_GENERATED, NULL);
	if (rv != CKR_OK) {
		p11_objects_free(o);
		return rv;
	}
	wire_put_u64(c->w, o->handle);
	return CKR_OK;
}

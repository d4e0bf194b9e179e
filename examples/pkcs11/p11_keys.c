/* SPDX-License-Identifier: ISC */
/*
 * The token's objects and keys: creation (import), destruction, search,
 * attributes with the rules that keep private values inside the guest,
 * EC key-pair generation and ECDSA signing. See p11_token.h.
 *
 * Private keys are always sensitive and never extractable: a template
 * that asks otherwise is refused, CKA_VALUE of a private key is never
 * returned (CKR_ATTRIBUTE_SENSITIVE) nor matched by C_FindObjects.
 */
#include <string.h>

#include "../ssh-agent/agent_wipe.h"
#include "p11_ec.h"
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
	       type == CKA_KEY_GEN_MECHANISM || type == CKA_CERTIFICATE_CATEGORY;
}

/* Set by the token only. */
static bool is_token_set(uint64_t type)
{
	return type == CKA_LOCAL || type == CKA_ALWAYS_SENSITIVE || type == CKA_NEVER_EXTRACTABLE ||
	       type == CKA_KEY_GEN_MECHANISM;
}

/* Fixed once the object exists (C_SetAttributeValue refuses them). */
static bool is_fixed(uint64_t type)
{
	return is_token_set(type) || type == CKA_CLASS || type == CKA_KEY_TYPE || type == CKA_TOKEN ||
	       type == CKA_PRIVATE || type == CKA_VALUE || type == CKA_EC_PARAMS || type == CKA_EC_POINT ||
	       type == CKA_CERTIFICATE_TYPE || type == CKA_MODIFIABLE || type == CKA_COPYABLE ||
	       type == CKA_DESTROYABLE || type == CKA_ALWAYS_AUTHENTICATE;
}

static bool sensitive(const struct p11_object *o, uint64_t type)
{
	return type == CKA_VALUE && p11_obj_ulong(o, CKA_CLASS, CKO_DATA) == CKO_PRIVATE_KEY;
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
static CK_RV put_template(struct p11_object *o, const struct p11_template *t)
{
	for (uint32_t i = 0; i < t->n; i++) {
		const struct p11_attr *a = &t->a[i];
		uint32_t len;
		CK_RV rv = attr_form(a);
		if (rv != CKR_OK)
			return rv;
		if (is_token_set(a->type))
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

static CK_RV set_bool(struct p11_object *o, uint64_t type, bool v)
{
	return p11_obj_set(o, type, v ? &yes : &no, 1) ? CKR_OK : CKR_DEVICE_MEMORY;
}

static const struct dflt common_dflt[] = {
	B(CKA_TOKEN, no), B(CKA_MODIFIABLE, yes), B(CKA_COPYABLE, no), B(CKA_DESTROYABLE, yes),
	EMPTY(CKA_LABEL),
};
static const struct dflt key_dflt[] = {
	EMPTY(CKA_ID), EMPTY(CKA_START_DATE), EMPTY(CKA_END_DATE), B(CKA_DERIVE, no), B(CKA_LOCAL, no),
	EMPTY(CKA_SUBJECT),
};
static const struct dflt priv_dflt[] = {
	B(CKA_PRIVATE, yes), B(CKA_SENSITIVE, yes), B(CKA_EXTRACTABLE, no), B(CKA_SIGN, yes),
	B(CKA_DECRYPT, no), B(CKA_UNWRAP, no), B(CKA_SIGN_RECOVER, no), B(CKA_ALWAYS_AUTHENTICATE, no),
	B(CKA_WRAP_WITH_TRUSTED, no), B(CKA_ALWAYS_SENSITIVE, no), B(CKA_NEVER_EXTRACTABLE, no),
};
static const struct dflt pub_dflt[] = {
	B(CKA_PRIVATE, no), B(CKA_VERIFY, yes), B(CKA_ENCRYPT, no), B(CKA_WRAP, no),
	B(CKA_VERIFY_RECOVER, no), B(CKA_TRUSTED, no),
};
static const struct dflt cert_dflt[] = {
	B(CKA_PRIVATE, no), B(CKA_TRUSTED, no), EMPTY(CKA_ID), EMPTY(CKA_SUBJECT), EMPTY(CKA_ISSUER),
	EMPTY(CKA_SERIAL_NUMBER),
};
static const struct dflt data_dflt[] = { B(CKA_PRIVATE, yes), EMPTY(CKA_APPLICATION), EMPTY(CKA_VALUE) };
#define PUT(o, d) put_defaults(o, d, sizeof d / sizeof d[0])

/* A key object's curve (CKA_EC_PARAMS), or NULL. */
static const struct p11_curve *curve_of(const struct p11_object *o)
{
	uint32_t len;
	const uint8_t *p = p11_obj_attr(o, CKA_EC_PARAMS, &len);
	return p ? p11_ec_curve(p, len) : NULL;
}

/* Completes an object built from a caller's template (import: keygen
 * sets the generated attributes first) and checks it as a whole. */
static CK_RV finish_object(struct p11_call *c, struct p11_session *s, struct p11_object *o, bool generated)
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
		if (p11_obj_ulong(o, CKA_KEY_TYPE, CKK_EC) != CKK_EC)
			return CKR_ATTRIBUTE_VALUE_INVALID;
		if ((rv = set_ulong(o, CKA_KEY_TYPE, CKK_EC)) != CKR_OK || (rv = PUT(o, key_dflt)) != CKR_OK)
			return rv;
		const struct p11_curve *curve = curve_of(o);
		if (!p11_obj_attr(o, CKA_EC_PARAMS, &len))
			return CKR_TEMPLATE_INCOMPLETE;
		if (!curve)
			return CKR_CURVE_NOT_SUPPORTED;
		if (cls == CKO_PUBLIC_KEY) {
			if ((rv = PUT(o, pub_dflt)) != CKR_OK)
				return rv;
			const uint8_t *pt = p11_obj_attr(o, CKA_EC_POINT, &len);
			if (!pt)
				return CKR_TEMPLATE_INCOMPLETE;
			if (len != 3 + 2 * curve->scalar || pt[0] != 0x04 || pt[1] != len - 2 || pt[2] != 0x04)
				return CKR_ATTRIBUTE_VALUE_INVALID;
			break;
		}
		/* Private: always sensitive, never extractable. */
		if ((rv = PUT(o, priv_dflt)) != CKR_OK)
			return rv;
		if (!p11_obj_bool(o, CKA_SENSITIVE, true) || p11_obj_bool(o, CKA_EXTRACTABLE, false))
			return CKR_ATTRIBUTE_VALUE_INVALID;
		if (generated)
			break;
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
		agent_wipe(d, sizeof d);
		if (!ok)
			return CKR_ATTRIBUTE_VALUE_INVALID;
		if (!p11_obj_set(o, CKA_EC_POINT, pt, (uint32_t)ptlen))
			return CKR_DEVICE_MEMORY;
		break;
	}
	case CKO_CERTIFICATE:
		if (p11_obj_ulong(o, CKA_CERTIFICATE_TYPE, CKC_X_509) != CKC_X_509)
			return CKR_ATTRIBUTE_VALUE_INVALID;
		if (!p11_obj_attr(o, CKA_VALUE, &len))
			return CKR_TEMPLATE_INCOMPLETE;
		if ((rv = set_ulong(o, CKA_CERTIFICATE_TYPE, CKC_X_509)) != CKR_OK ||
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
	if (p11_obj_bool(o, CKA_TOKEN, false) && !s->rw)
		return CKR_SESSION_READ_ONLY;
	if (p11_obj_bool(o, CKA_PRIVATE, true) && c->app->login != CKU_USER)
		return CKR_USER_NOT_LOGGED_IN;
	if (!p11_obj_bool(o, CKA_TOKEN, false))
		o->session = s->handle;
	return CKR_OK;
}

CK_RV p11_op_create(struct p11_call *c)
{
	struct p11_session *s = p11_session_get(c, p11_get_u64(c->r));
	struct p11_template t;
	p11_get_template(c->r, &t);
	if (c->r->bad || !p11_reader_done(c->r))
		return CKR_ARGUMENTS_BAD;
	if (!s)
		return CKR_SESSION_HANDLE_INVALID;
	struct p11_object *o = p11_objects_new(&c->t->objects, 0);
	if (!o)
		return CKR_DEVICE_MEMORY;
	CK_RV rv = put_template(o, &t);
	if (rv == CKR_OK)
		rv = finish_object(c, s, o, false);
	if (rv != CKR_OK) {
		p11_objects_free(o);
		return rv;
	}
	p11_put_u64(c->w, o->handle);
	return CKR_OK;
}

/* The object a session may use, or NULL. */
static struct p11_object *object(struct p11_call *c, uint64_t handle)
{
	struct p11_object *o = p11_objects_get(&c->t->objects, handle);
	return o && p11_visible(c, o) ? o : NULL;
}

CK_RV p11_op_destroy(struct p11_call *c)
{
	struct p11_session *s = p11_session_get(c, p11_get_u64(c->r));
	struct p11_object *o = object(c, p11_get_u64(c->r));
	if (!s)
		return CKR_SESSION_HANDLE_INVALID;
	if (!o)
		return CKR_OBJECT_HANDLE_INVALID;
	if (!o->session && !s->rw)
		return CKR_SESSION_READ_ONLY;
	if (!p11_obj_bool(o, CKA_DESTROYABLE, true))
		return CKR_ACTION_PROHIBITED;
	p11_objects_free(o);
	return CKR_OK;
}

CK_RV p11_op_get_attrs(struct p11_call *c)
{
	struct p11_session *s = p11_session_get(c, p11_get_u64(c->r));
	struct p11_object *o = object(c, p11_get_u64(c->r));
	uint32_t n = p11_get_u32(c->r);
	if (n > P11_ATTRS_MAX || c->r->bad)
		return CKR_ARGUMENTS_BAD;
	if (!s)
		return CKR_SESSION_HANDLE_INVALID;
	if (!o)
		return CKR_OBJECT_HANDLE_INVALID;
	CK_RV rv = CKR_OK;
	p11_put_u32(c->w, n);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t type = p11_get_u64(c->r), room = p11_get_u64(c->r);
		uint32_t len;
		const uint8_t *v = p11_obj_attr(o, type, &len);
		CK_RV why = !v ? CKR_ATTRIBUTE_TYPE_INVALID
			    : sensitive(o, type) ? CKR_ATTRIBUTE_SENSITIVE
			    : room != P11_NO_BUFFER && room < len ? CKR_BUFFER_TOO_SMALL : CKR_OK;
		/* Of several failures, any one may be returned (PKCS#11 2.40). */
		if (why != CKR_OK)
			rv = why;
		p11_put_u64(c->w, why != CKR_OK ? CK_UNAVAILABLE_INFORMATION : len);
		p11_put_bytes(c->w, v, why == CKR_OK && room != P11_NO_BUFFER ? len : 0);
	}
	if (c->r->bad)
		return CKR_ARGUMENTS_BAD;
	return rv;
}

CK_RV p11_op_set_attrs(struct p11_call *c)
{
	struct p11_session *s = p11_session_get(c, p11_get_u64(c->r));
	struct p11_object *o = object(c, p11_get_u64(c->r));
	struct p11_template t;
	p11_get_template(c->r, &t);
	if (c->r->bad || !p11_reader_done(c->r))
		return CKR_ARGUMENTS_BAD;
	if (!s)
		return CKR_SESSION_HANDLE_INVALID;
	if (!o)
		return CKR_OBJECT_HANDLE_INVALID;
	if (!o->session && !s->rw)
		return CKR_SESSION_READ_ONLY;
	if (!p11_obj_bool(o, CKA_MODIFIABLE, true))
		return CKR_ACTION_PROHIBITED;
	/* All or nothing: built on a copy, which then replaces the object. */
	struct p11_object *n = &c->t->scratch;
	memcpy(n, o, sizeof *n);
	CK_RV rv = CKR_OK;
	for (uint32_t i = 0; i < t.n && rv == CKR_OK; i++) {
		const struct p11_attr *a = &t.a[i];
		CK_BBOOL b = 0;
		rv = attr_form(a);
		if (rv != CKR_OK)
			break;
		if (is_bool_attr(a->type))
			b = a->value[0] != 0;
		/* Sensitive may only be turned on, extractable only off. */
		if (a->type == CKA_SENSITIVE || a->type == CKA_EXTRACTABLE) {
			bool now = p11_obj_bool(n, a->type, a->type == CKA_SENSITIVE);
			if (a->type == CKA_SENSITIVE ? now && !b : !now && b)
				rv = CKR_ATTRIBUTE_READ_ONLY;
		} else if (is_fixed(a->type)) {
			rv = CKR_ATTRIBUTE_READ_ONLY;
		}
		if (rv == CKR_OK && !p11_obj_set(n, a->type, a->value, a->len))
			rv = CKR_DEVICE_MEMORY;
	}
	if (rv == CKR_OK)
		memcpy(o, n, sizeof *o);
	agent_wipe(n, sizeof *n);
	return rv;
}

static bool matches(const struct p11_object *o, const struct p11_template *t)
{
	for (uint32_t i = 0; i < t->n; i++) {
		uint32_t len;
		const uint8_t *v = p11_obj_attr(o, t->a[i].type, &len);
		if (!v || sensitive(o, t->a[i].type) || len != t->a[i].len || memcmp(v, t->a[i].value, len))
			return false;
	}
	return true;
}

CK_RV p11_op_find_init(struct p11_call *c)
{
	struct p11_session *s = p11_session_get(c, p11_get_u64(c->r));
	struct p11_template t;
	p11_get_template(c->r, &t);
	if (c->r->bad || !p11_reader_done(c->r))
		return CKR_ARGUMENTS_BAD;
	if (!s)
		return CKR_SESSION_HANDLE_INVALID;
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
	struct p11_session *s = p11_session_get(c, p11_get_u64(c->r));
	uint32_t max = p11_get_u32(c->r);
	if (!s)
		return CKR_SESSION_HANDLE_INVALID;
	if (!s->finding)
		return CKR_OPERATION_NOT_INITIALIZED;
	uint32_t n = s->nfound - s->pos;
	if (n > max)
		n = max;
	if (n > P11_FIND_MAX)
		n = P11_FIND_MAX;
	p11_put_u32(c->w, n);
	for (uint32_t i = 0; i < n; i++)
		p11_put_u64(c->w, s->found[s->pos++]);
	return CKR_OK;
}

CK_RV p11_op_find_final(struct p11_call *c)
{
	struct p11_session *s = p11_session_get(c, p11_get_u64(c->r));
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

static bool has_attr(const struct p11_template *t, uint64_t type)
{
	for (uint32_t i = 0; i < t->n; i++)
		if (t->a[i].type == type)
			return true;
	return false;
}

/* One generated half: template, then class, curve and generated values. */
static CK_RV generated(struct p11_call *c, struct p11_session *s, struct p11_object *o,
		       const struct p11_template *t, CK_OBJECT_CLASS cls, const struct p11_curve *curve,
		       const uint8_t *d, const uint8_t *pt, size_t ptlen)
{
	CK_RV rv = put_template(o, t);
	if (rv != CKR_OK)
		return rv;
	if (p11_obj_ulong(o, CKA_CLASS, cls) != cls || has_attr(t, CKA_VALUE) || has_attr(t, CKA_EC_POINT))
		return CKR_TEMPLATE_INCONSISTENT;
	if ((rv = set_ulong(o, CKA_CLASS, cls)) != CKR_OK ||
	    (rv = set_ulong(o, CKA_KEY_GEN_MECHANISM, CKM_EC_KEY_PAIR_GEN)) != CKR_OK ||
	    (rv = set_bool(o, CKA_LOCAL, true)) != CKR_OK)
		return rv;
	if (!has_attr(t, CKA_EC_PARAMS) && !p11_obj_set(o, CKA_EC_PARAMS, curve->oid, (uint32_t)curve->oid_len))
		return CKR_DEVICE_MEMORY;
	if (curve_of(o) != curve)
		return CKR_TEMPLATE_INCONSISTENT;
	if (!p11_obj_set(o, CKA_EC_POINT, pt, (uint32_t)ptlen))
		return CKR_DEVICE_MEMORY;
	if (cls == CKO_PRIVATE_KEY) {
		if (!p11_obj_set(o, CKA_VALUE, d, (uint32_t)curve->scalar))
			return CKR_DEVICE_MEMORY;
		if ((rv = set_bool(o, CKA_ALWAYS_SENSITIVE, true)) != CKR_OK ||
		    (rv = set_bool(o, CKA_NEVER_EXTRACTABLE, true)) != CKR_OK)
			return rv;
	}
	return finish_object(c, s, o, true);
}

CK_RV p11_op_keygen(struct p11_call *c)
{
	struct p11_session *s = p11_session_get(c, p11_get_u64(c->r));
	CK_MECHANISM_TYPE mech = p11_get_u64(c->r);
	uint32_t plen;
	p11_get_bytes(c->r, &plen, P11_ATTR_VALUE_MAX);
	struct p11_template pub, priv;
	p11_get_template(c->r, &pub);
	p11_get_template(c->r, &priv);
	if (c->r->bad || !p11_reader_done(c->r))
		return CKR_ARGUMENTS_BAD;
	if (!s)
		return CKR_SESSION_HANDLE_INVALID;
	if (mech != CKM_EC_KEY_PAIR_GEN)
		return CKR_MECHANISM_INVALID;
	if (plen)
		return CKR_MECHANISM_PARAM_INVALID;
	const struct p11_curve *curve = template_curve(&pub, &priv);
	if (!curve)
		return has_attr(&pub, CKA_EC_PARAMS) || has_attr(&priv, CKA_EC_PARAMS) ? CKR_CURVE_NOT_SUPPORTED
										: CKR_TEMPLATE_INCOMPLETE;
	br_hmac_drbg_context drbg;
	if (!c->t->env->seed(c->t->env->ctx, &drbg))
		return CKR_DEVICE_ERROR;
	uint8_t d[P11_EC_SCALAR_MAX], pt[P11_EC_POINT_DER_MAX];
	size_t ptlen = p11_ec_keygen(curve, &drbg.vtable, d, pt);
	agent_wipe(&drbg, sizeof drbg);
	if (!ptlen)
		return CKR_DEVICE_ERROR;
	struct p11_object *po = p11_objects_new(&c->t->objects, 0);
	struct p11_object *ko = p11_objects_new(&c->t->objects, 0);
	CK_RV rv = po && ko ? CKR_OK : CKR_DEVICE_MEMORY;
	if (rv == CKR_OK)
		rv = generated(c, s, po, &pub, CKO_PUBLIC_KEY, curve, d, pt, ptlen);
	if (rv == CKR_OK)
		rv = generated(c, s, ko, &priv, CKO_PRIVATE_KEY, curve, d, pt, ptlen);
	agent_wipe(d, sizeof d);
	if (rv != CKR_OK) {
		if (po)
			p11_objects_free(po);
		if (ko)
			p11_objects_free(ko);
		return rv;
	}
	p11_put_u64(c->w, po->handle);
	p11_put_u64(c->w, ko->handle);
	return CKR_OK;
}

/* ---- signing */

CK_RV p11_op_sign_init(struct p11_call *c)
{
	struct p11_session *s = p11_session_get(c, p11_get_u64(c->r));
	CK_MECHANISM_TYPE mech = p11_get_u64(c->r);
	uint32_t plen;
	p11_get_bytes(c->r, &plen, P11_ATTR_VALUE_MAX);
	struct p11_object *k = object(c, p11_get_u64(c->r));
	if (c->r->bad)
		return CKR_ARGUMENTS_BAD;
	if (!s)
		return CKR_SESSION_HANDLE_INVALID;
	if (s->signing)
		return CKR_OPERATION_ACTIVE;
	if (mech != CKM_ECDSA && mech != CKM_ECDSA_SHA256 && mech != CKM_ECDSA_SHA384)
		return CKR_MECHANISM_INVALID;
	if (plen)
		return CKR_MECHANISM_PARAM_INVALID;
	if (!k)
		return CKR_KEY_HANDLE_INVALID;
	if (p11_obj_ulong(k, CKA_CLASS, ~0ul) != CKO_PRIVATE_KEY || p11_obj_ulong(k, CKA_KEY_TYPE, ~0ul) != CKK_EC ||
	    !curve_of(k))
		return CKR_KEY_TYPE_INCONSISTENT;
	if (!p11_obj_bool(k, CKA_SIGN, false))
		return CKR_KEY_FUNCTION_NOT_PERMITTED;
	s->signing = true;
	s->updated = false;
	s->mech = mech;
	s->key = k->handle;
	if (mech == CKM_ECDSA_SHA256)
		br_sha256_init(&s->h.s256);
	else if (mech == CKM_ECDSA_SHA384)
		br_sha384_init(&s->h.s384);
	return CKR_OK;
}

static void hash_update(struct p11_session *s, const uint8_t *p, size_t n)
{
	if (s->mech == CKM_ECDSA_SHA256)
		br_sha256_update(&s->h.s256, p, n);
	else
		br_sha384_update(&s->h.s384, p, n);
}

CK_RV p11_op_sign_update(struct p11_call *c)
{
	struct p11_session *s = p11_session_get(c, p11_get_u64(c->r));
	uint32_t len;
	const uint8_t *data = p11_get_bytes(c->r, &len, P11_DATA_MAX);
	if (!s)
		return CKR_SESSION_HANDLE_INVALID;
	if (!s->signing)
		return CKR_OPERATION_NOT_INITIALIZED;
	if (c->r->bad) {
		p11_session_end_ops(c->t, s, false);
		return CKR_ARGUMENTS_BAD;
	}
	if (s->mech == CKM_ECDSA) { /* single-part only */
		p11_session_end_ops(c->t, s, false);
		return CKR_FUNCTION_NOT_SUPPORTED;
	}
	hash_update(s, data, len);
	s->updated = true;
	return CKR_OK;
}

/* C_Sign (final false: data comes with it) and C_SignFinal. A length
 * query or a buffer too small keeps the operation; anything else ends it. */
CK_RV p11_op_sign(struct p11_call *c, bool final)
{
	struct p11_session *s = p11_session_get(c, p11_get_u64(c->r));
	bool query = p11_get_u8(c->r) != 0;
	uint64_t room = p11_get_u64(c->r);
	uint32_t len = 0;
	const uint8_t *data = final ? NULL : p11_get_bytes(c->r, &len, P11_DATA_MAX);
	if (!s)
		return CKR_SESSION_HANDLE_INVALID;
	if (!s->signing)
		return CKR_OPERATION_NOT_INITIALIZED;
	CK_RV rv = CKR_OK;
	struct p11_object *k = object(c, s->key);
	const struct p11_curve *curve = k ? curve_of(k) : NULL;
	if (c->r->bad || !p11_reader_done(c->r))
		rv = CKR_ARGUMENTS_BAD;
	else if (final ? s->mech == CKM_ECDSA || !s->updated : s->updated)
		rv = final ? CKR_OPERATION_NOT_INITIALIZED : CKR_OPERATION_ACTIVE;
	else if (!curve)
		rv = CKR_KEY_HANDLE_INVALID;
	if (rv != CKR_OK) {
		p11_session_end_ops(c->t, s, false);
		return rv;
	}
	size_t siglen = 2 * curve->scalar;
	if (query || room < siglen) {
		p11_put_u64(c->w, siglen);
		p11_put_bytes(c->w, NULL, 0);
		return query ? CKR_OK : CKR_BUFFER_TOO_SMALL;
	}
	if (!final && s->mech == CKM_ECDSA && (len == 0 || len > P11_EC_SIG_MAX)) {
		p11_session_end_ops(c->t, s, false);
		return CKR_DATA_LEN_RANGE;
	}
	uint8_t h[P11_EC_SIG_MAX], d[P11_EC_SCALAR_MAX];
	size_t hlen = 0;
	if (s->mech == CKM_ECDSA) {
		memcpy(h, data, len);
		hlen = len;
	} else {
		if (!final)
			hash_update(s, data, len);
		if (s->mech == CKM_ECDSA_SHA256)
			br_sha256_out(&s->h.s256, h), hlen = 32;
		else
			br_sha384_out(&s->h.s384, h), hlen = 48;
	}
	uint32_t dlen;
	const uint8_t *v = p11_obj_attr(k, CKA_VALUE, &dlen);
	p11_put_u64(c->w, siglen);
	uint8_t *sig = p11_put_bytes_room(c->w, siglen);
	bool ok = v && dlen == curve->scalar && sig;
	if (ok) {
		memcpy(d, v, dlen);
		ok = p11_ec_sign(curve, d, h, hlen, sig);
		agent_wipe(d, sizeof d);
	}
	agent_wipe(h, sizeof h);
	p11_session_end_ops(c->t, s, false);
	if (!ok)
		return CKR_FUNCTION_FAILED;
	c->t->signatures++;
	return CKR_OK;
}

/* SPDX-License-Identifier: ISC */
/* The rules that keep a key's value inside the token: see p11_policy.h. */
#include "p11_policy.h"

#include "p11_rsa.h"

static const CK_BBOOL yes = CK_TRUE, no = CK_FALSE;

static CK_OBJECT_CLASS class_of(const struct p11_object *o)
{
	return p11_obj_ulong(o, CKA_CLASS, CKO_DATA);
}

/* Keys that hold a secret value: private and secret keys. */
static bool holds_secret(const struct p11_object *o)
{
	CK_OBJECT_CLASS c = class_of(o);
	return c == CKO_PRIVATE_KEY || c == CKO_SECRET_KEY;
}

static bool has(const struct p11_object *o, uint64_t type)
{
	uint32_t len;
	return p11_obj_attr(o, type, &len) != NULL;
}

static bool put(struct p11_object *o, uint64_t type, bool v)
{
	return p11_obj_set(o, type, v ? &yes : &no, 1);
}

bool p11_policy_token_set(uint64_t type)
{
	return type == CKA_LOCAL || type == CKA_ALWAYS_SENSITIVE || type == CKA_NEVER_EXTRACTABLE ||
	       type == CKA_KEY_GEN_MECHANISM;
}

/* Whether o may be CKA_TRUSTED: a public key, or a secret key that was
 * made here (CKA_LOCAL: generated, not derived, whose value a peer of the
 * derivation would know) and always sensitive, so no one knows the value
 * of a key that sensitive keys may be wrapped under; and one that cannot
 * decrypt, else a decryption (CKM_AES_ECB) would undo its wrapping. */
static bool may_be_trusted(const struct p11_object *o)
{
	switch (class_of(o)) {
	case CKO_PUBLIC_KEY:
	case CKO_CERTIFICATE:
		return true;
	case CKO_SECRET_KEY:
		return p11_obj_bool(o, CKA_SENSITIVE, false) && p11_obj_bool(o, CKA_ALWAYS_SENSITIVE, false) &&
		       p11_obj_bool(o, CKA_LOCAL, false) && !p11_obj_bool(o, CKA_DECRYPT, true);
	default:
		return false;
	}
}

CK_RV p11_policy_check(const struct p11_object *o)
{
	if (p11_obj_bool(o, CKA_DECRYPT, false) && p11_obj_bool(o, CKA_UNWRAP, false))
		return CKR_TEMPLATE_INCONSISTENT;
	if (p11_obj_bool(o, CKA_TRUSTED, false) && !may_be_trusted(o))
		return CKR_TEMPLATE_INCONSISTENT;
	return CKR_OK;
}

CK_RV p11_policy_new_key(struct p11_object *o, enum p11_origin origin, unsigned long who,
			 const struct p11_object *base)
{
	CK_OBJECT_CLASS cls = class_of(o);
	if (holds_secret(o)) {
		bool sensitive = p11_obj_bool(o, CKA_SENSITIVE, true);
		bool extractable = p11_obj_bool(o, CKA_EXTRACTABLE, false);
		bool wwt = p11_obj_bool(o, CKA_WRAP_WITH_TRUSTED, false);
		/* A private key, and any key that came in wrapped, stays
		 * sensitive: what was wrapped is never readable here. */
		if (!sensitive && (cls == CKO_PRIVATE_KEY || origin == P11_UNWRAPPED))
			return CKR_ATTRIBUTE_VALUE_INVALID;
		/* Exportable only under trusted keys: CKA_WRAP_WITH_TRUSTED comes
		 * with CKA_EXTRACTABLE on a sensitive key. */
		if (sensitive && extractable) {
			if (has(o, CKA_WRAP_WITH_TRUSTED) && !wwt)
				return CKR_ATTRIBUTE_VALUE_INVALID;
			wwt = true;
		}
		bool unwrap = p11_obj_bool(o, CKA_UNWRAP, false);
		bool decrypt = p11_obj_bool(o, CKA_DECRYPT, cls == CKO_SECRET_KEY && !unwrap);
		bool always = false, never = false;
		if (origin == P11_GENERATED) {
			always = sensitive, never = !extractable;
		} else if (origin == P11_DERIVED && base) {
			always = sensitive && p11_obj_bool(base, CKA_ALWAYS_SENSITIVE, false);
			never = !extractable && p11_obj_bool(base, CKA_NEVER_EXTRACTABLE, false);
		}
		if (!put(o, CKA_SENSITIVE, sensitive) || !put(o, CKA_EXTRACTABLE, extractable) ||
		    !put(o, CKA_WRAP_WITH_TRUSTED, wwt) || !put(o, CKA_UNWRAP, unwrap) || !put(o, CKA_DECRYPT, decrypt) ||
		    !put(o, CKA_ALWAYS_SENSITIVE, always) || !put(o, CKA_NEVER_EXTRACTABLE, never))
			return CKR_DEVICE_MEMORY;
	}
	if (cls == CKO_PRIVATE_KEY || cls == CKO_PUBLIC_KEY || cls == CKO_SECRET_KEY)
		if (!put(o, CKA_LOCAL, origin == P11_GENERATED))
			return CKR_DEVICE_MEMORY;
	if (p11_obj_bool(o, CKA_TRUSTED, false)) {
		if (who != CKU_SO)
			return CKR_ATTRIBUTE_READ_ONLY;
		if (!may_be_trusted(o))
			return CKR_ATTRIBUTE_VALUE_INVALID;
	}
	if ((cls == CKO_PUBLIC_KEY || cls == CKO_SECRET_KEY) && !has(o, CKA_TRUSTED) && !put(o, CKA_TRUSTED, false))
		return CKR_DEVICE_MEMORY;
	return p11_policy_check(o);
}

/* Fixed once the object exists (besides the token's own). */
static bool is_fixed(uint64_t type)
{
	return type == CKA_CLASS || type == CKA_KEY_TYPE || type == CKA_VALUE || type == CKA_VALUE_LEN ||
	       type == CKA_EC_PARAMS || type == CKA_EC_POINT || type == CKA_CERTIFICATE_TYPE ||
	       type == CKA_ALWAYS_AUTHENTICATE || type == CKA_MODULUS || type == CKA_MODULUS_BITS ||
	       type == CKA_PUBLIC_EXPONENT || p11_rsa_secret_attr(type);
}

CK_RV p11_policy_set(const struct p11_object *o, const struct p11_attr *a, unsigned long who, bool copy)
{
	CK_BBOOL v = 0;
	bool boolean = p11_attr_bool(a, &v);
	/* A key the SO trusted is the SO's to change (or copy changed). */
	if (who != CKU_SO && p11_obj_bool(o, CKA_TRUSTED, false))
		return CKR_ATTRIBUTE_READ_ONLY;
	switch (a->type) {
	case CKA_DECRYPT:
	case CKA_UNWRAP:
		/* On a key with a secret value: turn off, never on. Else a key
		 * made to unwrap (never to decrypt) could drop CKA_UNWRAP, take
		 * CKA_DECRYPT, and decrypt what was wrapped under it. */
		return holds_secret(o) && boolean && v && !p11_obj_bool(o, a->type, false) ? CKR_ATTRIBUTE_READ_ONLY
											     : CKR_OK;
	case CKA_SENSITIVE: /* turns on, never off */
		return boolean && !v && p11_obj_bool(o, CKA_SENSITIVE, holds_secret(o)) ? CKR_ATTRIBUTE_READ_ONLY
											 : CKR_OK;
	case CKA_EXTRACTABLE: /* turns off, never on */
		return boolean && v && !p11_obj_bool(o, CKA_EXTRACTABLE, false) ? CKR_ATTRIBUTE_READ_ONLY : CKR_OK;
	case CKA_WRAP_WITH_TRUSTED: /* turns on, never off */
		return boolean && !v && p11_obj_bool(o, CKA_WRAP_WITH_TRUSTED, false) ? CKR_ATTRIBUTE_READ_ONLY
										       : CKR_OK;
	case CKA_TRUSTED:
		if (who != CKU_SO)
			return CKR_ATTRIBUTE_READ_ONLY;
		return boolean && v && !may_be_trusted(o) ? CKR_ATTRIBUTE_VALUE_INVALID : CKR_OK;
	case CKA_TOKEN:
		return copy ? CKR_OK : CKR_ATTRIBUTE_READ_ONLY;
	case CKA_PRIVATE: /* a copy may be more private, never less */
		return copy && (!boolean || v || !p11_obj_bool(o, CKA_PRIVATE, true)) ? CKR_OK
										      : CKR_ATTRIBUTE_READ_ONLY;
	case CKA_COPYABLE:
		/* turns off, never on */
		return boolean && v && !p11_obj_bool(o, CKA_COPYABLE, true) ? CKR_ATTRIBUTE_READ_ONLY : CKR_OK;
	case CKA_MODIFIABLE:
	case CKA_DESTROYABLE: /* a copy may have them off */
		return copy && boolean && !v ? CKR_OK : CKR_ATTRIBUTE_READ_ONLY;
	default:
		return p11_policy_token_set(a->type) || is_fixed(a->type) ? CKR_ATTRIBUTE_READ_ONLY : CKR_OK;
	}
}

bool p11_policy_readable(const struct p11_object *o, uint64_t type)
{
	switch (class_of(o)) {
	case CKO_PRIVATE_KEY:
		return !(type == CKA_VALUE || p11_rsa_secret_attr(type));
	case CKO_SECRET_KEY:
		return type != CKA_VALUE ||
		       (!p11_obj_bool(o, CKA_SENSITIVE, true) && p11_obj_bool(o, CKA_EXTRACTABLE, false));
	default:
		return true;
	}
}

CK_RV p11_policy_wrap(const struct p11_object *w, const struct p11_object *key)
{
	if (!p11_obj_bool(key, CKA_EXTRACTABLE, false))
		return CKR_KEY_UNEXTRACTABLE;
	bool sensitive = class_of(key) == CKO_PRIVATE_KEY || p11_obj_bool(key, CKA_SENSITIVE, true) ||
			 p11_obj_bool(key, CKA_WRAP_WITH_TRUSTED, false);
	if (sensitive && !p11_obj_bool(w, CKA_TRUSTED, false))
		return CKR_KEY_NOT_WRAPPABLE;
	return CKR_OK;
}

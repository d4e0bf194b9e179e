/* SPDX-License-Identifier: ISC */
/*
 * Keys in and out of the token without their values in the clear:
 * C_WrapKey and C_UnwrapKey with AES key wrap (RFC 3394,
 * CKM_AES_KEY_WRAP) and with padding (RFC 5649: CKM_AES_KEY_WRAP_KWP,
 * and CKM_AES_KEY_WRAP_PAD, SoftHSM2's number for it), p11_aes.c's, and
 * RSA-OAEP (p11_rsa.c's), and C_DeriveKey with ECDH on P-256 and P-384
 * (BearSSL's constant-time point multiplication). A secret key travels
 * as its value, a private key as PKCS#8 (p11_pkcs8.c), under AES only
 * (RSA-OAEP carries a secret key: a private key is too long for it).
 *
 * Who may wrap what is p11_policy.c's: the key must be extractable, and a
 * sensitive one goes only under a key the SO trusted. A key unwrapped
 * here is always sensitive: what came in wrapped is never readable.
 */
#include <string.h>

#include <bearssl/bearssl_ec.h>

#include "wipe.h"
#include "p11_ec.h"
#include "p11_pkcs8.h"
#include "p11_rsa.h"
#include "p11_token.h"

/* The AES wrapping mechanisms: RFC 3394 (pad false) or RFC 5649. */
static bool aes_wrap_mech(CK_MECHANISM_TYPE mech, bool *pad)
{
	*pad = mech == CKM_AES_KEY_WRAP_PAD || mech == CKM_AES_KEY_WRAP_KWP;
	return *pad || mech == CKM_AES_KEY_WRAP;
}

/* The wrapping (or unwrapping) key w fits the mechanism: an AES secret
 * key for AES key wrap; for RSA-OAEP an RSA public key to wrap, a private
 * one to unwrap. */
static CK_RV wrapping_key_fits(const struct p11_object *w, bool aes, bool unwrap)
{
	CK_OBJECT_CLASS cls = aes ? CKO_SECRET_KEY : unwrap ? CKO_PRIVATE_KEY : CKO_PUBLIC_KEY;
	CK_KEY_TYPE kt = aes ? CKK_AES : CKK_RSA;
	if (p11_obj_ulong(w, CKA_CLASS, ~0ul) != cls || p11_obj_ulong(w, CKA_KEY_TYPE, ~0ul) != kt)
		return unwrap ? CKR_UNWRAPPING_KEY_TYPE_INCONSISTENT : CKR_WRAPPING_KEY_TYPE_INCONSISTENT;
	return p11_obj_bool(w, unwrap ? CKA_UNWRAP : CKA_WRAP, false) ? CKR_OK : CKR_KEY_FUNCTION_NOT_PERMITTED;
}

/* The bytes a key travels as, in buf (P11_PKCS8_MAX): a secret key's
 * value, a private key's PrivateKeyInfo. Their length, or 0. */
static size_t key_bytes(const struct p11_object *k, uint8_t *buf)
{
	if (p11_obj_ulong(k, CKA_CLASS, ~0ul) == CKO_PRIVATE_KEY)
		return p11_pkcs8_write(k, buf, P11_PKCS8_MAX);
	uint32_t len;
	const uint8_t *v = p11_obj_attr(k, CKA_VALUE, &len);
	if (!v || len > P11_PKCS8_MAX)
		return 0;
	memcpy(buf, v, len);
	return len;
}

/* C_WrapKey: u64 mech, bytes param, u64 wrapping key, u64 key, u8 length
 * only, u64 room -> u64 len, bytes. */
CK_RV p11_op_wrap(struct p11_call *c)
{
	CK_MECHANISM_TYPE mech = wire_get_u64(c->r);
	struct wire_bytes param = p11_get_bytes(c->r, P11_ATTR_VALUE_MAX);
	struct p11_object *w = p11_object(c, wire_get_u64(c->r)), *k = p11_object(c, wire_get_u64(c->r));
	bool query = wire_get_u8(c->r) != 0;
	uint64_t room = wire_get_u64(c->r);
	CK_RV rv = p11_args_checked(c, true);
	if (rv != CKR_OK)
		return rv;
	bool pad, aes = aes_wrap_mech(mech, &pad);
	if (!aes && mech != CKM_RSA_PKCS_OAEP)
		return CKR_MECHANISM_INVALID;
	if (aes && param.len)
		return CKR_MECHANISM_PARAM_INVALID;
	if (!w)
		return CKR_WRAPPING_KEY_HANDLE_INVALID;
	if (!k)
		return CKR_KEY_HANDLE_INVALID;
	if ((rv = wrapping_key_fits(w, aes, false)) != CKR_OK)
		return rv;
	CK_OBJECT_CLASS cls = p11_obj_ulong(k, CKA_CLASS, ~0ul);
	if (cls != CKO_SECRET_KEY && (cls != CKO_PRIVATE_KEY || !aes))
		return CKR_KEY_NOT_WRAPPABLE;
	if ((rv = p11_policy_wrap(w, k)) != CKR_OK)
		return rv;
	struct p11_opstate oaep; /* RSA-OAEP's parameters */
	wipe(&oaep, sizeof oaep);
	struct p11_rsa_key key;
	uint32_t klen = 0;
	const uint8_t *kek = aes ? p11_obj_attr(w, CKA_VALUE, &klen) : NULL;
	if (!aes) {
		p11_rsa_view(w, &key);
		if ((rv = p11_rsa_params(&oaep, mech, param)) != CKR_OK)
			return rv;
	}
	uint8_t *pt = c->t->out;
	size_t len = key_bytes(k, pt), n = 0;
	if (!len)
		rv = CKR_KEY_NOT_WRAPPABLE;
	else if (aes)
		n = p11_aes_wrap_len(pad, len);
	else
		n = len <= p11_rsa_encrypt_max(&key, oaep.hash) ? (p11_rsa_bits(&key) + 7) / 8 : 0;
	if (rv == CKR_OK && !n)
		rv = CKR_KEY_SIZE_RANGE;
	if (rv == CKR_OK && !p11_length_only(c, query, room, n, &rv)) {
		wire_put_u64(c->w, n);
		uint8_t *dst = wire_put_string_room(c->w, n);
		bool ok = dst != NULL;
		br_hmac_drbg_context drbg;
		if (ok && aes) {
			ok = p11_aes_wrap(pad, kek, klen, pt, len, dst) == n;
		} else if (ok) {
			ok = c->t->env->seed(c->t->env->ctx, &drbg) &&
			     p11_rsa_encrypt(&key, &drbg, oaep.hash, oaep.u.oaep.label, oaep.u.oaep.len, pt, len, dst);
			wipe(&drbg, sizeof drbg);
		}
		rv = ok ? CKR_OK : CKR_FUNCTION_FAILED;
	}
	wipe(pt, P11_PKCS8_MAX);
	wipe(&oaep, sizeof oaep);
	return rv;
}

/* The unwrapped bytes into a new object (its template applied): a secret
 * key's value, or the private key a PrivateKeyInfo holds. */
static CK_RV unwrapped_key(struct p11_object *o, const struct p11_template *t, const uint8_t *v, size_t len)
{
	static const uint64_t given[] = { CKA_VALUE, CKA_EC_POINT, CKA_MODULUS, CKA_PUBLIC_EXPONENT };
	for (size_t i = 0; i < sizeof given / sizeof given[0]; i++)
		if (p11_template_has(t, given[i]))
			return CKR_TEMPLATE_INCONSISTENT;
	for (int i = P11_RSA_D; i < P11_RSA_PARTS; i++)
		if (p11_template_has(t, p11_rsa_attr[i]))
			return CKR_TEMPLATE_INCONSISTENT;
	uint32_t alen;
	if (!p11_obj_attr(o, CKA_CLASS, &alen))
		return CKR_TEMPLATE_INCOMPLETE;
	CK_OBJECT_CLASS cls = p11_obj_ulong(o, CKA_CLASS, ~0ul);
	if (cls == CKO_SECRET_KEY) {
		if (!p11_obj_attr(o, CKA_KEY_TYPE, &alen))
			return CKR_TEMPLATE_INCOMPLETE;
		return p11_obj_set(o, CKA_VALUE, v, (uint32_t)len) ? CKR_OK : CKR_DEVICE_MEMORY;
	}
	if (cls != CKO_PRIVATE_KEY)
		return CKR_TEMPLATE_INCONSISTENT;
	struct p11_pkcs8 k;
	if (!p11_pkcs8_read(v, len, &k))
		return CKR_WRAPPED_KEY_INVALID;
	CK_ULONG kt = k.type;
	if (p11_obj_ulong(o, CKA_KEY_TYPE, kt) != kt)
		return CKR_TEMPLATE_INCONSISTENT;
	if (!p11_obj_set(o, CKA_KEY_TYPE, &kt, sizeof kt))
		return CKR_DEVICE_MEMORY;
	if (k.type == CKK_RSA) {
		for (int i = 0; i < P11_RSA_PARTS; i++)
			if (!p11_obj_set(o, p11_rsa_attr[i], k.rsa.v[i], (uint32_t)k.rsa.len[i]))
				return CKR_DEVICE_MEMORY;
		return CKR_OK;
	}
	if (p11_obj_attr(o, CKA_EC_PARAMS, &alen) ? p11_curve_of(o) != k.curve
						  : !p11_obj_set(o, CKA_EC_PARAMS, k.curve->oid, (uint32_t)k.curve->oid_len))
		return CKR_TEMPLATE_INCONSISTENT;
	return p11_obj_set(o, CKA_VALUE, k.d, (uint32_t)k.dlen) ? CKR_OK : CKR_DEVICE_MEMORY;
}

/* C_UnwrapKey: u64 mech, bytes param, u64 unwrapping key, bytes wrapped,
 * template -> u64 key. */
CK_RV p11_op_unwrap(struct p11_call *c)
{
	CK_MECHANISM_TYPE mech = wire_get_u64(c->r);
	struct wire_bytes param = p11_get_bytes(c->r, P11_ATTR_VALUE_MAX);
	struct p11_object *u = p11_object(c, wire_get_u64(c->r));
	struct wire_bytes wrapped = p11_get_bytes(c->r, P11_DATA_MAX);
	struct p11_template t;
	CK_RV rv = p11_get_last_template(c, &t);
	if (rv != CKR_OK)
		return rv;
	bool pad, aes = aes_wrap_mech(mech, &pad);
	if (!aes && mech != CKM_RSA_PKCS_OAEP)
		return CKR_MECHANISM_INVALID;
	if (aes && param.len)
		return CKR_MECHANISM_PARAM_INVALID;
	if (!u)
		return CKR_UNWRAPPING_KEY_HANDLE_INVALID;
	if ((rv = wrapping_key_fits(u, aes, true)) != CKR_OK)
		return rv;
	struct p11_opstate oaep;
	wipe(&oaep, sizeof oaep);
	uint8_t *pt = c->t->out;
	size_t n = 0;
	if (aes) {
		uint32_t klen;
		const uint8_t *kek = p11_obj_attr(u, CKA_VALUE, &klen);
		if (wrapped.len % 8 || wrapped.len < (pad ? 16u : 24u) || wrapped.len > P11_PKCS8_MAX + 16)
			rv = CKR_WRAPPED_KEY_LEN_RANGE;
		else if (!p11_aes_unwrap(pad, kek, klen, wrapped.p, wrapped.len, pt, &n))
			rv = CKR_WRAPPED_KEY_INVALID;
	} else {
		struct p11_rsa_key key;
		p11_rsa_view(u, &key);
		br_hmac_drbg_context drbg;
		if ((rv = p11_rsa_params(&oaep, mech, param)) == CKR_OK && wrapped.len != (p11_rsa_bits(&key) + 7) / 8)
			rv = CKR_WRAPPED_KEY_LEN_RANGE;
		if (rv == CKR_OK && (!c->t->env->seed(c->t->env->ctx, &drbg) ||
				     !p11_rsa_decrypt(&key, &drbg, oaep.hash, oaep.u.oaep.label, oaep.u.oaep.len,
						      wrapped.p, wrapped.len, pt, &n)))
			rv = CKR_WRAPPED_KEY_INVALID;
		wipe(&drbg, sizeof drbg);
	}
	struct p11_object *o = rv == CKR_OK ? p11_objects_new(&c->t->objects, 0) : NULL;
	if (rv == CKR_OK && !o)
		rv = CKR_DEVICE_MEMORY;
	if (rv == CKR_OK)
		rv = p11_object_apply(o, &t);
	if (rv == CKR_OK)
		rv = unwrapped_key(o, &t, pt, n);
	if (rv == CKR_OK)
		rv = p11_object_finish(c, o, P11_UNWRAPPED, NULL);
	wipe(pt, P11_PKCS8_MAX + 16);
	wipe(&oaep, sizeof oaep);
	if (rv != CKR_OK) {
		if (o)
			p11_objects_free(o);
		return rv;
	}
	wire_put_u64(c->w, o->handle);
	return CKR_OK;
}

/* ---- ECDH */

/* The other party's point: uncompressed (04 || X || Y) for the base key's
 * curve, bare or in a DER OCTET STRING (as some callers send it). */
static bool peer_point(const struct p11_curve *curve, struct wire_bytes pub, uint8_t *pt)
{
	size_t n = 1 + 2 * curve->scalar;
	if (pub.len == n + 2 && pub.p[0] == 0x04 && pub.p[1] == n)
		pub.p += 2, pub.len -= 2;
	if (pub.len != n || pub.p[0] != 0x04)
		return false;
	memcpy(pt, pub.p, n);
	return true;
}

/* The derived key's length: CKA_VALUE_LEN if the template gives one (at
 * most the shared secret's), else all of it (a generic secret) or the
 * longest AES key it makes, as SoftHSM2 does; 0 if none fits. */
static size_t derived_len(const struct p11_object *o, CK_KEY_TYPE kt, size_t zlen)
{
	uint32_t len;
	if (p11_obj_attr(o, CKA_VALUE_LEN, &len)) {
		unsigned long want = p11_obj_ulong(o, CKA_VALUE_LEN, 0);
		return want <= zlen && p11_secret_len_ok(kt, want) ? want : 0;
	}
	if (kt == CKK_AES)
		return zlen >= 32 ? 32 : zlen >= 24 ? 24 : zlen >= 16 ? 16 : 0;
	return zlen;
}

/* C_DeriveKey: CKM_ECDH1_DERIVE and CKM_ECDH1_COFACTOR_DERIVE (the same on
 * P-256 and P-384, whose cofactor is 1) with CKD_NULL: the shared
 * secret's x coordinate, its last bytes if the key is shorter (as
 * SoftHSM2 takes them). The parameter travels flattened: u64 kdf, bytes
 * shared data, bytes public data. */
CK_RV p11_op_derive(struct p11_call *c)
{
	CK_MECHANISM_TYPE mech = wire_get_u64(c->r);
	struct wire_bytes param = p11_get_bytes(c->r, P11_ATTR_VALUE_MAX);
	struct p11_object *base = p11_object(c, wire_get_u64(c->r));
	struct p11_template t;
	CK_RV rv = p11_get_last_template(c, &t);
	if (rv != CKR_OK)
		return rv;
	if (mech != CKM_ECDH1_DERIVE && mech != CKM_ECDH1_COFACTOR_DERIVE)
		return CKR_MECHANISM_INVALID;
	if ((rv = p11_key_usable(base, CKO_PRIVATE_KEY, CKK_EC, CKA_DERIVE)) != CKR_OK)
		return rv;
	struct wire_reader pr;
	wire_reader_init(&pr, param.p, param.len);
	uint64_t kdf = wire_get_u64(&pr);
	struct wire_bytes shared = wire_get_string(&pr), pub = wire_get_string(&pr);
	const struct p11_curve *curve = p11_curve_of(base);
	uint8_t pt[P11_EC_POINT_MAX], z[P11_EC_SCALAR_MAX];
	if (!wire_done(&pr) || kdf != CKD_NULL || shared.len || !peer_point(curve, pub, pt))
		return CKR_MECHANISM_PARAM_INVALID;
	uint32_t dlen;
	const uint8_t *d = p11_obj_attr(base, CKA_VALUE, &dlen);
	/* BearSSL checks that the point is on the curve, and multiplies in
	 * constant time (its documentation, for br_ec_all_m31's curves). */
	if (!d || !br_ec_all_m31.mul(pt, 1 + 2 * curve->scalar, d, dlen, curve->id))
		rv = CKR_MECHANISM_PARAM_INVALID;
	memcpy(z, pt + 1, curve->scalar);
	struct p11_object *o = rv == CKR_OK ? p11_objects_new(&c->t->objects, 0) : NULL;
	if (rv == CKR_OK && !o)
		rv = CKR_DEVICE_MEMORY;
	if (rv == CKR_OK)
		rv = p11_object_apply(o, &t);
	if (rv == CKR_OK && (p11_template_has(&t, CKA_VALUE) ||
			     p11_obj_ulong(o, CKA_CLASS, CKO_SECRET_KEY) != CKO_SECRET_KEY))
		rv = CKR_TEMPLATE_INCONSISTENT;
	CK_ULONG cls = CKO_SECRET_KEY, kt = o ? p11_obj_ulong(o, CKA_KEY_TYPE, CKK_GENERIC_SECRET) : 0;
	size_t n = rv == CKR_OK ? derived_len(o, kt, curve->scalar) : 0;
	if (rv == CKR_OK && !n)
		rv = CKR_KEY_SIZE_RANGE;
	if (rv == CKR_OK && (!p11_obj_set(o, CKA_CLASS, &cls, sizeof cls) || !p11_obj_set(o, CKA_KEY_TYPE, &kt, sizeof kt) ||
			     !p11_obj_set(o, CKA_VALUE, z + curve->scalar - n, (uint32_t)n)))
		rv = CKR_DEVICE_MEMORY;
	if (rv == CKR_OK)
		rv = p11_object_finish(c, o, P11_DERIVED, base);
	wipe(pt, sizeof pt);
	wipe(z, sizeof z);
	if (rv != CKR_OK) {
		if (o)
			p11_objects_free(o);
		return rv;
	}
	wire_put_u64(c->w, o->handle);
	return CKR_OK;
}

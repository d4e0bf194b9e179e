/* SPDX-License-Identifier: ISC */
/*
 * The rules that keep a key's value inside the token (docs/pkcs11.md,
 * "Keys that stay in"), in one place: what a new key's template may ask
 * for, what C_SetAttributeValue and C_CopyObject may change, which values
 * C_GetAttributeValue may return, and which key C_WrapKey may wrap under
 * which. In short:
 *
 *   - CKA_SENSITIVE: always true on a private key, and on a key made by
 *     C_UnwrapKey; true by default on a secret key. It may be turned on,
 *     never off.
 *   - CKA_EXTRACTABLE: false by default; it may be turned off, never on.
 *     A sensitive key is extractable only with CKA_WRAP_WITH_TRUSTED,
 *     which the token sets with it when the template does not say (and
 *     refuses it false): exportable only when made so, and then only
 *     under a trusted key.
 *   - CKA_WRAP_WITH_TRUSTED may be turned on, never off.
 *   - CKA_TRUSTED: only the Security Officer may set it (either way), on a
 *     public key or on a secret key that was always sensitive (made in
 *     the token, never readable), never on a key whose value someone
 *     could know.
 *   - No key both decrypts and unwraps (CKA_DECRYPT and CKA_UNWRAP are
 *     never both true): a key that unwraps cannot hand back in the clear
 *     what it unwrapped. A template that sets CKA_UNWRAP makes CKA_DECRYPT
 *     false by default.
 *   - CKA_ALWAYS_SENSITIVE, CKA_NEVER_EXTRACTABLE and CKA_LOCAL are the
 *     token's: set at creation from how the key came to be, then fixed.
 *   - A secret key's CKA_VALUE is readable only when it is neither
 *     sensitive nor unextractable (PKCS#11's rule); a private key's never.
 *   - C_WrapKey: the key must be extractable; a sensitive one only under a
 *     CKA_TRUSTED wrapping key.
 */
#ifndef P11_POLICY_H
#define P11_POLICY_H

#include <stdbool.h>

#include "p11_objects.h"
#include "p11_wire.h"

/* How a key came to be: what its token-set attributes say. */
enum p11_origin {
	P11_IMPORTED,  /* C_CreateObject: its value was outside */
	P11_GENERATED, /* C_GenerateKey, C_GenerateKeyPair: made in the token */
	P11_UNWRAPPED, /* C_UnwrapKey: it was outside, wrapped */
	P11_DERIVED,   /* C_DeriveKey: from a base key in the token */
};

/* Whether attribute type is one a caller may never set (the token's). */
bool p11_policy_token_set(uint64_t type);

/* A new key object o, its template applied (class and key type set),
 * made by a session whose application is logged in as who (CKU_SO,
 * CKU_USER or another value: nobody): fills in CKA_SENSITIVE,
 * CKA_EXTRACTABLE, CKA_WRAP_WITH_TRUSTED, CKA_TRUSTED, CKA_DECRYPT's
 * default and the token-set attributes, or refuses the template
 * (CKR_ATTRIBUTE_VALUE_INVALID, CKR_TEMPLATE_INCONSISTENT,
 * CKR_ATTRIBUTE_READ_ONLY). base: a derived key's base key, else NULL.
 * Objects that are not keys pass unchanged (CKA_TRUSTED on certificates
 * keeps to the same who-may-set rule). */
CK_RV p11_policy_new_key(struct p11_object *o, enum p11_origin origin, unsigned long who,
			 const struct p11_object *base);

/* Whether C_SetAttributeValue (or C_CopyObject's template) may set
 * attribute a on object o (its value before the change), for an
 * application logged in as who: CKR_OK, CKR_ATTRIBUTE_READ_ONLY or
 * CKR_ATTRIBUTE_VALUE_INVALID. copy: C_CopyObject, which may also set
 * CKA_TOKEN and CKA_PRIVATE and turn CKA_COPYABLE, CKA_MODIFIABLE and
 * CKA_DESTROYABLE off. */
CK_RV p11_policy_set(const struct p11_object *o, const struct p11_attr *a, unsigned long who, bool copy);
/* The object after all of a template's changes: CKR_TEMPLATE_INCONSISTENT
 * if it both decrypts and unwraps, or is trusted but no longer may be. */
CK_RV p11_policy_check(const struct p11_object *o);

/* Whether C_GetAttributeValue may return attribute type of o, and
 * C_FindObjects match on it. */
bool p11_policy_readable(const struct p11_object *o, uint64_t type);

/* Whether key may be wrapped under wrapping key w (both usable by the
 * session): CKR_OK, CKR_KEY_UNEXTRACTABLE, CKR_KEY_NOT_WRAPPABLE. */
CK_RV p11_policy_wrap(const struct p11_object *w, const struct p11_object *key);

#endif

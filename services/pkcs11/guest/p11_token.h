/* SPDX-License-Identifier: ISC */
/*
 * The token proper: one request body in, one reply body out. No I/O and
 * no runtime: the guest (main.c) feeds it frames from its channel, the
 * unit tests and the fuzz target call it directly. docs/pkcs11.md lists
 * what it implements and refuses.
 *
 * State: the token (label, PINs as salted hashes, objects) and, per
 * application (one C_Initialize of one process, named by the id in every
 * request), its login and its sessions. An application that never calls
 * C_Finalize keeps its slot until a new one needs it: the least recently
 * used without sessions goes first.
 */
#ifndef P11_TOKEN_H
#define P11_TOKEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <bearssl/bearssl_hash.h>
#include <bearssl/bearssl_hmac.h>
#include <bearssl/bearssl_rand.h>

#include "p11_aes.h"
#include "p11_objects.h"
#include "p11_policy.h"
#include "p11_wire.h"

#define P11_APPS_MAX 64
#define P11_SESSIONS_MAX 128
#define P11_NOBODY (~0ul) /* no login */
#define P11_SECRET_MAX 512 /* bytes of a generic secret key (an HMAC key's most, as SoftHSM2's) */

struct p11_token;

/*
 * A persistent store behind the token (the guest's p11_persist.c, over
 * store.c); without one the token lives in memory only. PINs are checked
 * by the store (a try spent per check, persisted); every successful change
 * of a token object is committed before the reply. Each returns a CK_RV.
 */
struct p11_persist {
	/* who's PIN (CKU_USER or CKU_SO); the first success loads the stored
	 * token objects into t (keeping its session objects). */
	CK_RV (*login)(void *ctx, struct p11_token *t, unsigned long who, const uint8_t *pin,
		       uint32_t len);
	/* Stores t's token objects if they changed; on failure puts back the
	 * last stored set (session objects kept). */
	CK_RV (*commit)(void *ctx, struct p11_token *t);
	/* A new store: this SO PIN and label, no objects, a user PIN nobody
	 * knows (C_InitPIN sets it). Checks the old SO PIN first, if any.
	 * The new token's serial number (from the new store's id) goes to
	 * serial. */
	CK_RV (*init_token)(void *ctx, const uint8_t *so_pin, uint32_t len, const uint8_t *label,
			    uint8_t serial[P11_SERIAL]);
	/* C_InitPIN (the SO logged in) and C_SetPIN (who's old PIN checked). */
	CK_RV (*init_pin)(void *ctx, const uint8_t *pin, uint32_t len);
	CK_RV (*set_pin)(void *ctx, unsigned long who, const uint8_t *old, uint32_t olen,
			 const uint8_t *pin, uint32_t len);
	/* CKF_{USER,SO}_PIN_{COUNT_LOW,FINAL_TRY,LOCKED}, as the store counts. */
	CK_FLAGS (*pin_flags)(void *ctx);
	void *ctx;
};

struct p11_env {
	/* Seeds drbg from fresh entropy; false if none could be had. */
	bool (*seed)(void *ctx, br_hmac_drbg_context *drbg);
	void *ctx;
	const struct p11_persist *persist; /* NULL: in memory only */
};

struct p11_app {
	uint8_t id[P11_APP_ID];
	bool used;
	unsigned long login; /* CKU_SO, CKU_USER or P11_NOBODY */
	uint64_t last_use;
};

/* The operations a session may have on at once, one of each kind
 * (PKCS#11 lets a session digest and encrypt at the same time, say). */
enum p11_kind { P11_KIND_SIGN, P11_KIND_VERIFY, P11_KIND_ENCRYPT, P11_KIND_DECRYPT, P11_KIND_DIGEST, P11_KINDS };

struct p11_opstate {
	bool on;
	bool updated; /* a multi-part call came: the single-part call is refused */
	CK_MECHANISM_TYPE mech;
	uint64_t key;
	unsigned long hash; /* RSA PSS and OAEP: the parameters' hash */
	uint32_t salt;	    /* PSS */
	union {
		br_hash_compat_context h; /* digests, the signatures that hash */
		br_hmac_context hmac;
		struct p11_cmac cmac;
		struct p11_aes aes;
		struct {
			uint32_t len;
			uint8_t label[P11_OAEP_LABEL_MAX];
		} oaep;
	} u;
};

struct p11_session {
	uint64_t handle; /* 0: free */
	unsigned app;
	bool rw;
	/* C_FindObjectsInit..Final */
	bool finding;
	uint32_t nfound, pos;
	uint32_t found[P11_OBJECTS_MAX];
	struct p11_opstate op[P11_KINDS];
};

struct p11_pin {
	bool set;
	uint8_t salt[16], hash[32];
};

struct p11_token {
	bool initialized;
	uint8_t label[P11_LABEL], serial[P11_SERIAL];
	struct p11_pin so, user;
	struct p11_app apps[P11_APPS_MAX];
	struct p11_session sessions[P11_SESSIONS_MAX];
	uint64_t next_session, tick;
	struct p11_objects objects;
	struct p11_object scratch; /* C_SetAttributeValue builds here first */
	uint8_t out[P11_DATA_MAX + 2 * P11_AES_BLOCK]; /* a result before it goes out (wiped after) */
	const struct p11_env *env;
	/* Counters for the guest's log. */
	unsigned long long requests, signatures, refused;
};

void p11_token_init(struct p11_token *t, const struct p11_env *env, const uint8_t serial[P11_SERIAL]);
/* A serial number (CK_TOKEN_INFO.serialNumber, 16 characters) from 8
 * bytes that name one token: a store's id (kept in the store, so the same
 * across restarts and new only for a new token), or random bytes for a
 * token in memory only. */
void p11_serial_of(const uint8_t id[P11_SERIAL / 2], uint8_t serial[P11_SERIAL]);
/* Handles one request body and writes the reply body to out (room for
 * P11_BODY_MAX): its length, or 0 if the request is not one (bad
 * version, unknown op, malformed): the caller then ends the connection.
 * The caller wipes req afterwards (it may hold a PIN or a key). */
size_t p11_token_handle(struct p11_token *t, const uint8_t *req, size_t len, uint8_t *out);

/* Between p11_token.c and the handlers' modules (p11_keys.c, p11_sign.c,
 * p11_crypt.c, p11_digest.c, p11_wrap.c): one request being handled. The dispatcher reads the session handle that
 * starts most requests' arguments (p11_wire.h) before the handler runs,
 * into s; the handler reads the rest and says where, among its checks, a
 * handle that names none of the application's sessions (s NULL) is
 * CKR_SESSION_HANDLE_INVALID. */
struct p11_call {
	struct p11_token *t;
	struct p11_app *app;
	struct p11_session *s;
	struct wire_reader *r;
	struct wire_writer *w;
};
struct p11_session *p11_session_get(struct p11_call *c, uint64_t handle);
/* A handler's first checks once it has read its arguments: that they were
 * read (and, if whole, that nothing follows them), else CKR_ARGUMENTS_BAD;
 * then that its session exists, else CKR_SESSION_HANDLE_INVALID. */
CK_RV p11_args_checked(const struct p11_call *c, bool whole);
/* A template argument, the last of its request: read, then checked as
 * p11_args_checked(c, true) does. */
CK_RV p11_get_last_template(struct p11_call *c, struct p11_template *t);
/* What C_SignInit, C_VerifyInit, C_EncryptInit and C_DecryptInit take
 * after the session: u64 mechanism, bytes parameter, u64 key. */
struct p11_init_args {
	CK_MECHANISM_TYPE mech;
	struct wire_bytes param;
	struct p11_object *key; /* NULL if the session may not use it */
};
/* Reads them, checks as p11_args_checked(c, whole) does, then that an
 * operation of this kind is not on in the session already
 * (CKR_OPERATION_ACTIVE). */
CK_RV p11_get_init_args(struct p11_call *c, struct p11_init_args *a, bool whole, enum p11_kind kind);
/* What the calls after an init check first, their arguments read: the
 * session (CKR_SESSION_HANDLE_INVALID), and that its operation of this
 * kind was started (CKR_OPERATION_NOT_INITIALIZED). */
CK_RV p11_ongoing(const struct p11_call *c, enum p11_kind kind);
/* In a request that carries an init and the call after it
 * (SIGN_INIT_SIGN, ENCRYPT_INIT_ENCRYPT, DECRYPT_INIT_DECRYPT), the init
 * part accepted: reads the call's own session handle, which must name
 * the init's session; else the operation the init started ends, and the
 * request is CKR_ARGUMENTS_BAD. */
CK_RV p11_then_session(struct p11_call *c, enum p11_kind kind);
/* Ends one operation: its state wiped, what it held freed. */
void p11_op_end(struct p11_opstate *op);
/* Ends the session's operation of this kind and returns rv. */
CK_RV p11_op_done(struct p11_call *c, enum p11_kind kind, CK_RV rv);
/* Whether key k may do what usage (CKA_SIGN, CKA_DECRYPT, ...) names as an
 * object of class cls and key type kt (an EC key on a curve the token
 * knows): CKR_KEY_HANDLE_INVALID, CKR_KEY_TYPE_INCONSISTENT,
 * CKR_KEY_FUNCTION_NOT_PERMITTED, or CKR_OK. */
CK_RV p11_key_usable(const struct p11_object *k, CK_OBJECT_CLASS cls, CK_KEY_TYPE kt, CK_ATTRIBUTE_TYPE usage);
/* Copies a template into an empty object, refusing what a caller may not
 * set (CKR_ATTRIBUTE_READ_ONLY), malformed values and duplicates. */
CK_RV p11_object_apply(struct p11_object *o, const struct p11_template *t);
/* Whether a template names attribute type. */
bool p11_template_has(const struct p11_template *t, uint64_t type);
/* Completes an object built from a caller's template (the generated or
 * unwrapped values set first) and checks it as a whole, with the rules
 * of p11_policy.h; base: a derived key's base key. */
CK_RV p11_object_finish(struct p11_call *c, struct p11_object *o, enum p11_origin origin,
			const struct p11_object *base);
/* An RSA encryption's parameters into op: none for CKM_RSA_PKCS; for
 * CKM_RSA_PKCS_OAEP the flattened CK_RSA_PKCS_OAEP_PARAMS (p11_wire.h), or
 * none at all for RFC 8017's default (SHA-1, MGF1-SHA1, no label). */
CK_RV p11_rsa_params(struct p11_opstate *op, CK_MECHANISM_TYPE mech, struct wire_bytes param);
/* Whether a secret key of type kt (CKK_AES, CKK_GENERIC_SECRET) may be
 * len bytes long. */
bool p11_secret_len_ok(CK_KEY_TYPE kt, size_t len);
/* The result of a call that hands bytes out (C_Sign, C_Encrypt, ...):
 * with query set or room below len, u64 len and no bytes
 * (CKR_BUFFER_TOO_SMALL unless a query), and true: the operation goes on;
 * else false, and the caller writes its result. */
bool p11_length_only(struct p11_call *c, bool query, uint64_t room, size_t len, CK_RV *rv);
bool p11_visible(const struct p11_call *c, const struct p11_object *o);
/* The object a session may use, or NULL. */
struct p11_object *p11_object(struct p11_call *c, uint64_t handle);
CK_RV p11_op_create(struct p11_call *c);
CK_RV p11_op_destroy(struct p11_call *c);
CK_RV p11_op_get_attrs(struct p11_call *c);
CK_RV p11_op_set_attrs(struct p11_call *c);
CK_RV p11_op_find_init(struct p11_call *c);
CK_RV p11_op_find(struct p11_call *c);
CK_RV p11_op_find_final(struct p11_call *c);
CK_RV p11_op_keygen(struct p11_call *c);
CK_RV p11_op_sign_init(struct p11_call *c);
CK_RV p11_op_sign(struct p11_call *c);
CK_RV p11_op_sign_final(struct p11_call *c);
CK_RV p11_op_sign_init_sign(struct p11_call *c);
CK_RV p11_op_sign_update(struct p11_call *c);
CK_RV p11_op_verify_init(struct p11_call *c);
CK_RV p11_op_verify(struct p11_call *c);
CK_RV p11_op_verify_update(struct p11_call *c);
CK_RV p11_op_verify_final(struct p11_call *c);
CK_RV p11_op_encrypt_init(struct p11_call *c);
CK_RV p11_op_encrypt(struct p11_call *c);
CK_RV p11_op_encrypt_update(struct p11_call *c);
CK_RV p11_op_encrypt_final(struct p11_call *c);
CK_RV p11_op_decrypt_init(struct p11_call *c);
CK_RV p11_op_decrypt(struct p11_call *c);
CK_RV p11_op_decrypt_update(struct p11_call *c);
CK_RV p11_op_decrypt_final(struct p11_call *c);
CK_RV p11_op_encrypt_init_encrypt(struct p11_call *c);
CK_RV p11_op_decrypt_init_decrypt(struct p11_call *c);
CK_RV p11_op_digest_init(struct p11_call *c);
CK_RV p11_op_digest(struct p11_call *c);
CK_RV p11_op_digest_update(struct p11_call *c);
CK_RV p11_op_digest_key(struct p11_call *c);
CK_RV p11_op_digest_final(struct p11_call *c);
CK_RV p11_op_generate_key(struct p11_call *c);
CK_RV p11_op_copy(struct p11_call *c);
CK_RV p11_op_object_size(struct p11_call *c);
CK_RV p11_op_wrap(struct p11_call *c);
CK_RV p11_op_unwrap(struct p11_call *c);
CK_RV p11_op_derive(struct p11_call *c);
/* Ends a session's operations, wiping their state; destroys its objects
 * when close is set. */
void p11_session_end_ops(struct p11_token *t, struct p11_session *s, bool close);

#endif

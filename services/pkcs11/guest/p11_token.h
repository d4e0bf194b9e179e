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
#include <bearssl/bearssl_rand.h>

#include "p11_objects.h"
#include "p11_wire.h"

#define P11_APPS_MAX 64
#define P11_SESSIONS_MAX 128
#define P11_NOBODY (~0ul) /* no login */

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

struct p11_session {
	uint64_t handle; /* 0: free */
	unsigned app;
	bool rw;
	/* C_FindObjectsInit..Final */
	bool finding;
	uint32_t nfound, pos;
	uint32_t found[P11_OBJECTS_MAX];
	/* C_SignInit..C_Sign/C_SignFinal */
	bool signing, updated;
	unsigned long mech;
	uint64_t key;
	br_hash_compat_context h; /* of the mechanisms that hash */
	/* CKM_*RSA_PKCS_PSS: the parameters' hash and salt length */
	unsigned long pss_hash;
	uint32_t pss_salt;
	/* C_DecryptInit..C_Decrypt */
	bool decrypting;
	unsigned long dmech, oaep_hash;
	uint64_t dkey;
	uint32_t label_len;
	uint8_t label[P11_OAEP_LABEL_MAX];
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

/* Between p11_token.c, p11_keys.c, p11_sign.c and p11_decrypt.c: one
 * request being handled. The dispatcher reads the session handle that
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
/* What C_SignInit and C_DecryptInit take after the session: u64
 * mechanism, bytes parameter, u64 key. */
struct p11_init_args {
	CK_MECHANISM_TYPE mech;
	struct wire_bytes param;
	struct p11_object *key; /* NULL if the session may not use it */
};
/* Reads them, checks as p11_args_checked(c, whole) does, then that the
 * operation they start (usage: CKA_SIGN or CKA_DECRYPT) is not active on
 * the session already (CKR_OPERATION_ACTIVE). */
CK_RV p11_get_init_args(struct p11_call *c, struct p11_init_args *a, bool whole, CK_ATTRIBUTE_TYPE usage);
/* What C_Sign, C_SignUpdate, C_SignFinal and C_Decrypt check first, their
 * arguments read: the session (CKR_SESSION_HANDLE_INVALID), and that its
 * operation (usage: CKA_SIGN or CKA_DECRYPT) was started
 * (CKR_OPERATION_NOT_INITIALIZED). */
CK_RV p11_ongoing(const struct p11_call *c, CK_ATTRIBUTE_TYPE usage);
/* Whether key k may do what usage (CKA_SIGN, CKA_DECRYPT) names as a
 * private key of type kt (an EC key on a curve the token knows):
 * CKR_KEY_HANDLE_INVALID, CKR_KEY_TYPE_INCONSISTENT,
 * CKR_KEY_FUNCTION_NOT_PERMITTED, or CKR_OK. */
CK_RV p11_key_usable(const struct p11_object *k, CK_KEY_TYPE kt, CK_ATTRIBUTE_TYPE usage);
bool p11_visible(const struct p11_call *c, const struct p11_object *o);
/* The object a session may use, or NULL. */
struct p11_object *p11_object(struct p11_call *c, uint64_t handle);
/* A key object's curve (CKA_EC_PARAMS), or NULL. */
struct p11_curve;
const struct p11_curve *p11_curve_of(const struct p11_object *o);
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
CK_RV p11_op_decrypt_init(struct p11_call *c);
CK_RV p11_op_decrypt(struct p11_call *c);
/* Ends a session's operations, wiping their state; destroys its objects
 * when close is set. */
void p11_session_end_ops(struct p11_token *t, struct p11_session *s, bool close);

#endif

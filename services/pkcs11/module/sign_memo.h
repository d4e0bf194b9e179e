/* SPDX-License-Identifier: ISC */
/*
 * The module's memory of C_SignInit calls the token accepted, per
 * session, so that the same call again can be deferred: C_SignInit then
 * answers CKR_OK at once and travels with the C_Sign that follows in one
 * request (P11_OP_SIGN_INIT_SIGN), one round trip to the guest instead of
 * two. Only a call the token accepted before, for a session with no
 * operation the module knows of, is deferred; every other goes to the
 * token at once, as before. The token still checks the deferred one: an
 * error it finds (the key destroyed since, the session gone) comes back
 * from C_Sign, and the operation is over, as after any failed C_Sign
 * (docs/pkcs11.md, "Deferred C_SignInit"). Nothing here is secret: a
 * session, a mechanism with its parameter bytes and a key handle.
 * Callers hold the module's lock.
 */
#ifndef CLOAK_P11_SIGN_MEMO_H
#define CLOAK_P11_SIGN_MEMO_H

#include <stdbool.h>
#include <stdint.h>

#define CRYPTOKI_COMPAT
#include <p11-kit/pkcs11.h>

#define SIGN_MEMO_SLOTS 16
#define SIGN_MEMO_PARAM 64 /* longer mechanism parameters are never deferred */

struct sign_init {
	CK_SESSION_HANDLE session;
	CK_MECHANISM_TYPE mech;
	CK_OBJECT_HANDLE key;
	uint32_t plen;
	uint8_t param[SIGN_MEMO_PARAM];
};

/* Fills *i from C_SignInit's arguments; false if they cannot be kept
 * (no mechanism, or a parameter longer than SIGN_MEMO_PARAM). */
bool sign_init_make(struct sign_init *i, CK_SESSION_HANDLE s, const CK_MECHANISM *m, CK_OBJECT_HANDLE key);
/* True if C_SignInit(i) may be deferred (the token accepted the same
 * call on this session and no operation is active or deferred there):
 * it is then deferred. */
bool sign_memo_defer(const struct sign_init *i);
/* True if the session has a deferred C_SignInit. */
bool sign_memo_deferred(CK_SESSION_HANDLE s);
/* Takes the session's deferred C_SignInit into *i (the caller sends it
 * now); false if there is none. */
bool sign_memo_take(CK_SESSION_HANDLE s, struct sign_init *i);
/* The token accepted C_SignInit(i): remembered, its operation active. */
void sign_memo_accepted(const struct sign_init *i);
/* The token refused a C_SignInit on this session: forgotten. */
void sign_memo_refused(CK_SESSION_HANDLE s);
/* After a sign call on the session: whether its operation goes on. */
void sign_memo_active(CK_SESSION_HANDLE s, bool active);
/* The session is closed. */
void sign_memo_drop(CK_SESSION_HANDLE s);
/* Keys may have changed (destroyed, attributes set): no C_SignInit is
 * deferred again until the token accepts it anew. */
void sign_memo_unsure(void);
/* Forgets everything (C_Initialize, C_Finalize, logout, all sessions
 * closed, token initialized). */
void sign_memo_clear(void);

#endif

/* SPDX-License-Identifier: ISC */
/*
 * The module's memory of the C_SignInit, C_EncryptInit and C_DecryptInit
 * calls the token accepted, per session and kind, so that the same call
 * again can be deferred: it then answers CKR_OK at once and travels with
 * the C_Sign, C_Encrypt or C_Decrypt that follows in one request
 * (P11_OP_SIGN_INIT_SIGN, ENCRYPT_INIT_ENCRYPT, DECRYPT_INIT_DECRYPT), one
 * round trip to the guest instead of two. Only a call the token accepted
 * before, for a session with no operation of its kind that the module
 * knows of, is deferred; every other goes to the token at once, as
 * before. "The same" is the same mechanism and key, and a parameter
 * identical in every byte that can make the token refuse the init:
 * - a signature: every byte;
 * - CKM_AES_ECB: no parameter; CKM_AES_CBC, CKM_AES_CBC_PAD: the IV's
 *   length (its 16 bytes may differ);
 * - CKM_AES_CTR: the length and ulCounterBits (the counter block may
 *   differ);
 * - CKM_AES_GCM, as it travels (p11_wire.h): ulIvBits, ulTagBits and the
 *   IV's length (the IV, and the AAD, its bytes and its length, may
 *   differ: the token reads any AAD);
 * - any other encryption or decryption mechanism (RSA) is never deferred.
 * The token still checks the deferred call: an error it finds (the key
 * destroyed since, a usage attribute set false by another process, the
 * session gone) comes back from the C_Sign, C_Encrypt or C_Decrypt, and
 * the operation is over, as after any failed call of that kind
 * (docs/pkcs11.md, "Deferred C_SignInit, C_EncryptInit and
 * C_DecryptInit").
 * Nothing here is secret: a session, a mechanism with its parameter bytes
 * (IVs, counter blocks, AAD: none of them is) and a key handle. Callers
 * hold the module's lock.
 */
#ifndef CLOAK_P11_INIT_MEMO_H
#define CLOAK_P11_INIT_MEMO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CRYPTOKI_COMPAT
#include <p11-kit/pkcs11.h>

#define INIT_MEMO_SLOTS 16  /* sessions */
#define INIT_MEMO_PARAM 256 /* longer mechanism parameters (as they travel) are never deferred */

/* The operations whose init may be deferred, each remembered apart. */
enum init_kind { INIT_SIGN, INIT_ENCRYPT, INIT_DECRYPT, INIT_KINDS };

struct init_call {
	CK_SESSION_HANDLE session;
	enum init_kind kind;
	CK_MECHANISM_TYPE mech;
	CK_OBJECT_HANDLE key;
	uint32_t plen;
	uint8_t param[INIT_MEMO_PARAM]; /* as it travels (p11_wire.h) */
};

/* Fills *i from an init's arguments, its parameter as it travels; false
 * if it is never deferred (a parameter longer than INIT_MEMO_PARAM, an
 * encryption or decryption mechanism other than AES's five). */
bool init_call_make(struct init_call *i, enum init_kind kind, CK_SESSION_HANDLE s, CK_MECHANISM_TYPE mech,
		    const void *param, size_t plen, CK_OBJECT_HANDLE key);
/* True if init i may be deferred (the token accepted the same init, as
 * above, on this session and no operation of its kind is active or
 * deferred there): it is then deferred, i kept to be sent. */
bool init_memo_defer(const struct init_call *i);
/* True if the session has a deferred init of this kind. */
bool init_memo_deferred(CK_SESSION_HANDLE s, enum init_kind k);
/* Takes the session's deferred init of this kind into *i (the caller
 * sends it now); false if there is none. */
bool init_memo_take(CK_SESSION_HANDLE s, enum init_kind k, struct init_call *i);
/* The token accepted init i: remembered, its operation active. */
void init_memo_accepted(const struct init_call *i);
/* The token refused an init or a call of this kind on the session (or
 * it cannot be remembered): forgotten. */
void init_memo_refused(CK_SESSION_HANDLE s, enum init_kind k);
/* After a call of this kind on the session: whether its operation goes
 * on. */
void init_memo_active(CK_SESSION_HANDLE s, enum init_kind k, bool active);
/* The session is closed: every kind forgotten. */
void init_memo_drop(CK_SESSION_HANDLE s);
/* Keys may have changed (destroyed, attributes set): no init is
 * deferred again until the token accepts it anew. */
void init_memo_unsure(void);
/* Forgets everything (C_Initialize, C_Finalize, logout, all sessions
 * closed, token initialized). */
void init_memo_clear(void);

#endif

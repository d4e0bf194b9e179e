/* SPDX-License-Identifier: ISC */
/*
 * The token's dispatch, its applications and sessions, login and PINs,
 * token and mechanism information, random numbers. Objects and keys are
 * p11_keys.c. See p11_token.h.
 */
#include "p11_token.h"

#include <string.h>

#include "wipe.h"
#include "p11_rsa.h"

void p11_token_init(struct p11_token *t, const struct p11_env *env, const uint8_t serial[P11_SERIAL])
{
	wipe(t, sizeof *t);
	t->env = env;
	memcpy(t->serial, serial, P11_SERIAL);
	memset(t->label, ' ', P11_LABEL);
	p11_objects_init(&t->objects);
	t->next_session = 1;
	for (unsigned i = 0; i < P11_APPS_MAX; i++)
		t->apps[i].login = P11_NOBODY;
}

void p11_serial_of(const uint8_t id[P11_SERIAL / 2], uint8_t serial[P11_SERIAL])
{
	for (unsigned i = 0; i < P11_SERIAL / 2; i++) {
		serial[2 * i] = "0123456789abcdef"[id[i] >> 4];
		serial[2 * i + 1] = "0123456789abcdef"[id[i] & 15];
	}
}

/* ---- PINs in memory: a salted SHA-256, for a token without a store
 * (with one, the store checks PINs: a slow derivation and a persisted
 * retry counter; docs/pkcs11-store.md). */

static void pin_hash(const uint8_t salt[16], const uint8_t *pin, uint32_t len, uint8_t out[32])
{
	br_sha256_context h;
	br_sha256_init(&h);
	br_sha256_update(&h, salt, 16);
	br_sha256_update(&h, pin, len);
	br_sha256_out(&h, out);
	wipe(&h, sizeof h);
}

static bool pin_ok(const struct p11_pin *p, const uint8_t *pin, uint32_t len)
{
	uint8_t h[32];
	unsigned d = 0;
	pin_hash(p->salt, pin, len, h);
	for (int i = 0; i < 32; i++)
		d |= h[i] ^ p->hash[i];
	wipe(h, sizeof h);
	return p->set && d == 0;
}

/* A new PIN's length: CKR_OK or CKR_PIN_LEN_RANGE. */
static CK_RV pin_len(uint32_t len)
{
	return len < P11_PIN_MIN || len > P11_PIN_MAX ? CKR_PIN_LEN_RANGE : CKR_OK;
}

static CK_RV pin_set(struct p11_token *t, struct p11_pin *p, const uint8_t *pin, uint32_t len)
{
	if (pin_len(len) != CKR_OK)
		return CKR_PIN_LEN_RANGE;
	br_hmac_drbg_context drbg;
	if (!t->env->seed(t->env->ctx, &drbg))
		return CKR_DEVICE_ERROR;
	br_hmac_drbg_generate(&drbg, p->salt, sizeof p->salt);
	wipe(&drbg, sizeof drbg);
	pin_hash(p->salt, pin, len, p->hash);
	p->set = true;
	return CKR_OK;
}

/* ---- applications and sessions */

static bool has_sessions(const struct p11_token *t, unsigned app)
{
	for (unsigned i = 0; i < P11_SESSIONS_MAX; i++)
		if (t->sessions[i].handle && t->sessions[i].app == app)
			return true;
	return false;
}

/* How much an application's slot is worth keeping: a free slot least,
 * then one without sessions, then by last use. */
static uint64_t worth(const struct p11_token *t, unsigned i)
{
	const struct p11_app *a = &t->apps[i];
	if (!a->used)
		return 0;
	return (has_sessions(t, i) ? 1ull << 63 : 0) | a->last_use;
}

static struct p11_app *app_get(struct p11_token *t, const uint8_t id[P11_APP_ID], bool create)
{
	unsigned victim = 0;
	for (unsigned i = 0; i < P11_APPS_MAX; i++) {
		struct p11_app *a = &t->apps[i];
		if (a->used && !memcmp(a->id, id, P11_APP_ID)) {
			a->last_use = ++t->tick;
			return a;
		}
		if (worth(t, i) < worth(t, victim))
			victim = i;
	}
	if (!create)
		return NULL;
	/* A new application takes a free slot, else the least recently used
	 * one without sessions, else the least recently used one, whose
	 * sessions end. */
	struct p11_app *lru = &t->apps[victim];
	for (unsigned i = 0; i < P11_SESSIONS_MAX; i++) {
		struct p11_session *s = &t->sessions[i];
		if (s->handle && &t->apps[s->app] == lru)
			p11_session_end_ops(t, s, true);
	}
	memcpy(lru->id, id, P11_APP_ID);
	lru->used = true;
	lru->login = P11_NOBODY;
	lru->last_use = ++t->tick;
	return lru;
}

struct p11_session *p11_session_get(struct p11_call *c, uint64_t handle)
{
	for (unsigned i = 0; handle && i < P11_SESSIONS_MAX; i++) {
		struct p11_session *s = &c->t->sessions[i];
		if (s->handle == handle && &c->t->apps[s->app] == c->app)
			return s;
	}
	return NULL;
}

CK_RV p11_args_checked(const struct p11_call *c, bool whole)
{
	if (c->r->bad || (whole && !wire_done(c->r)))
		return CKR_ARGUMENTS_BAD;
	return c->s ? CKR_OK : CKR_SESSION_HANDLE_INVALID;
}

CK_RV p11_get_last_template(struct p11_call *c, struct p11_template *t)
{
	p11_get_template(c->r, t);
	return p11_args_checked(c, true);
}

CK_RV p11_get_init_args(struct p11_call *c, struct p11_init_args *a, bool whole, enum p11_kind kind)
{
	a->mech = wire_get_u64(c->r);
	a->param = p11_get_bytes(c->r, P11_ATTR_VALUE_MAX);
	a->key = p11_object(c, wire_get_u64(c->r));
	CK_RV rv = p11_args_checked(c, whole);
	return rv == CKR_OK && c->s->op[kind].on ? CKR_OPERATION_ACTIVE : rv;
}

CK_RV p11_ongoing(const struct p11_call *c, enum p11_kind kind)
{
	if (!c->s)
		return CKR_SESSION_HANDLE_INVALID;
	return c->s->op[kind].on ? CKR_OK : CKR_OPERATION_NOT_INITIALIZED;
}

CK_RV p11_then_session(struct p11_call *c, enum p11_kind kind)
{
	uint64_t h = wire_get_u64(c->r);
	if (c->r->bad || h != c->s->handle)
		return p11_op_done(c, kind, CKR_ARGUMENTS_BAD);
	return CKR_OK;
}

void p11_op_end(struct p11_opstate *op)
{
	if (op->on && p11_aes_mode(op->mech))
		p11_aes_end(&op->u.aes);
	wipe(op, sizeof *op);
}

CK_RV p11_op_done(struct p11_call *c, enum p11_kind kind, CK_RV rv)
{
	p11_op_end(&c->s->op[kind]);
	return rv;
}

bool p11_length_only(struct p11_call *c, bool query, uint64_t room, size_t len, CK_RV *rv)
{
	if (!query && room >= len)
		return false;
	wire_put_u64(c->w, len);
	wire_put_string(c->w, NULL, 0);
	*rv = query ? CKR_OK : CKR_BUFFER_TOO_SMALL;
	return true;
}

bool p11_visible(const struct p11_call *c, const struct p11_object *o)
{
	if (o->session) {
		bool mine = false;
		for (unsigned i = 0; i < P11_SESSIONS_MAX; i++) {
			const struct p11_session *s = &c->t->sessions[i];
			if (s->handle == o->session && &c->t->apps[s->app] == c->app)
				mine = true;
		}
		if (!mine)
			return false;
	}
	return c->app->login == CKU_USER || !p11_obj_bool(o, CKA_PRIVATE, true);
}

void p11_session_end_ops(struct p11_token *t, struct p11_session *s, bool close)
{
	s->finding = false;
	for (int k = 0; k < P11_KINDS; k++)
		p11_op_end(&s->op[k]);
	if (!close)
		return;
	for (unsigned i = 0; i < P11_OBJECTS_MAX; i++)
		if (t->objects.o[i].handle && t->objects.o[i].session == s->handle)
			p11_objects_free(&t->objects.o[i]);
	unsigned app = s->app;
	wipe(s, sizeof *s);
	/* The application's last session closed: it is logged out. */
	for (unsigned i = 0; i < P11_SESSIONS_MAX; i++)
		if (t->sessions[i].handle && t->sessions[i].app == app)
			return;
	t->apps[app].login = P11_NOBODY;
}

static unsigned app_index(const struct p11_call *c)
{
	return (unsigned)(c->app - c->t->apps);
}

static void close_app_sessions(struct p11_call *c)
{
	for (unsigned i = 0; i < P11_SESSIONS_MAX; i++) {
		struct p11_session *s = &c->t->sessions[i];
		if (s->handle && s->app == app_index(c))
			p11_session_end_ops(c->t, s, true);
	}
	c->app->login = P11_NOBODY;
}

static CK_RV op_open_session(struct p11_call *c)
{
	CK_FLAGS flags = wire_get_u64(c->r);
	if (!(flags & CKF_SERIAL_SESSION))
		return CKR_SESSION_PARALLEL_NOT_SUPPORTED;
	if (!c->t->initialized)
		return CKR_TOKEN_NOT_RECOGNIZED;
	bool rw = flags & CKF_RW_SESSION;
	if (!rw && c->app->login == CKU_SO)
		return CKR_SESSION_READ_WRITE_SO_EXISTS;
	for (unsigned i = 0; i < P11_SESSIONS_MAX; i++) {
		struct p11_session *s = &c->t->sessions[i];
		if (s->handle)
			continue;
		s->handle = c->t->next_session++;
		s->app = app_index(c);
		s->rw = rw;
		wire_put_u64(c->w, s->handle);
		return CKR_OK;
	}
	return CKR_SESSION_COUNT;
}

static CK_RV op_close_session(struct p11_call *c)
{
	if (!c->s)
		return CKR_SESSION_HANDLE_INVALID;
	p11_session_end_ops(c->t, c->s, true);
	return CKR_OK;
}

static CK_RV op_session_info(struct p11_call *c)
{
	struct p11_session *s = c->s;
	if (!s)
		return CKR_SESSION_HANDLE_INVALID;
	CK_STATE state = c->app->login == CKU_SO     ? CKS_RW_SO_FUNCTIONS
			 : c->app->login == CKU_USER ? (s->rw ? CKS_RW_USER_FUNCTIONS : CKS_RO_USER_FUNCTIONS)
						     : (s->rw ? CKS_RW_PUBLIC_SESSION : CKS_RO_PUBLIC_SESSION);
	wire_put_u64(c->w, state);
	wire_put_u64(c->w, CKF_SERIAL_SESSION | (s->rw ? CKF_RW_SESSION : 0));
	return CKR_OK;
}

/* ---- login and PINs */

static CK_RV op_login(struct p11_call *c)
{
	CK_USER_TYPE who = wire_get_u64(c->r);
	struct wire_bytes pin = p11_get_bytes(c->r, P11_PIN_MAX);
	CK_RV rv = p11_args_checked(c, false);
	if (rv != CKR_OK)
		return rv;
	if (who != CKU_SO && who != CKU_USER)
		return who == CKU_CONTEXT_SPECIFIC ? CKR_OPERATION_NOT_INITIALIZED : CKR_USER_TYPE_INVALID;
	if (c->app->login != P11_NOBODY)
		return c->app->login == who ? CKR_USER_ALREADY_LOGGED_IN
					    : CKR_USER_ANOTHER_ALREADY_LOGGED_IN;
	if (who == CKU_SO)
		for (unsigned i = 0; i < P11_SESSIONS_MAX; i++)
			if (c->t->sessions[i].handle && c->t->sessions[i].app == app_index(c) &&
			    !c->t->sessions[i].rw)
				return CKR_SESSION_READ_ONLY_EXISTS;
	struct p11_pin *p = who == CKU_SO ? &c->t->so : &c->t->user;
	if (!p->set)
		return CKR_USER_PIN_NOT_INITIALIZED;
	const struct p11_persist *ps = c->t->env->persist;
	if (ps) {
		rv = ps->login(ps->ctx, c->t, who, pin.p, pin.len);
		if (rv != CKR_OK)
			return rv;
	} else if (!pin_ok(p, pin.p, pin.len)) {
		return CKR_PIN_INCORRECT;
	}
	c->app->login = who;
	return CKR_OK;
}

static CK_RV op_logout(struct p11_call *c)
{
	if (!c->s)
		return CKR_SESSION_HANDLE_INVALID;
	if (c->app->login == P11_NOBODY)
		return CKR_USER_NOT_LOGGED_IN;
	c->app->login = P11_NOBODY;
	/* Operations on private keys end with the login. */
	for (unsigned i = 0; i < P11_SESSIONS_MAX; i++)
		if (c->t->sessions[i].handle && c->t->sessions[i].app == app_index(c))
			p11_session_end_ops(c->t, &c->t->sessions[i], false);
	return CKR_OK;
}

static CK_RV op_init_token(struct p11_call *c)
{
	struct wire_bytes pin = p11_get_bytes(c->r, P11_PIN_MAX);
	const uint8_t *label = wire_get_raw(c->r, P11_LABEL);
	if (c->r->bad)
		return CKR_PIN_LEN_RANGE;
	for (unsigned i = 0; i < P11_SESSIONS_MAX; i++)
		if (c->t->sessions[i].handle)
			return CKR_SESSION_EXISTS;
	const struct p11_persist *ps = c->t->env->persist;
	if (ps) {
		CK_RV rv = pin_len(pin.len);
		if (rv == CKR_OK)
			rv = ps->init_token(ps->ctx, pin.p, pin.len, label, c->t->serial);
		if (rv != CKR_OK)
			return rv;
		c->t->so.set = true;
	} else {
		if (c->t->initialized && !pin_ok(&c->t->so, pin.p, pin.len))
			return CKR_PIN_INCORRECT;
		CK_RV rv = pin_set(c->t, &c->t->so, pin.p, pin.len);
		if (rv != CKR_OK)
			return rv;
		/* A token initialised again is a new token: a new serial. */
		br_hmac_drbg_context drbg;
		uint8_t id[P11_SERIAL / 2];
		if (c->t->initialized && c->t->env->seed(c->t->env->ctx, &drbg)) {
			br_hmac_drbg_generate(&drbg, id, sizeof id);
			p11_serial_of(id, c->t->serial);
		}
		wipe(&drbg, sizeof drbg);
	}
	/* A new token: no user PIN, no objects, nobody logged in. */
	wipe(&c->t->user, sizeof c->t->user);
	p11_objects_init(&c->t->objects);
	for (unsigned i = 0; i < P11_APPS_MAX; i++)
		c->t->apps[i].login = P11_NOBODY;
	memcpy(c->t->label, label, P11_LABEL);
	c->t->initialized = true;
	return CKR_OK;
}

/* What C_InitPIN and C_SetPIN check first, their arguments read: a
 * session, and a read-write one. */
static CK_RV rw_session(const struct p11_call *c)
{
	CK_RV rv = p11_args_checked(c, false);
	return rv != CKR_OK ? rv : c->s->rw ? CKR_OK : CKR_SESSION_READ_ONLY;
}

static CK_RV op_init_pin(struct p11_call *c)
{
	struct wire_bytes pin = p11_get_bytes(c->r, P11_PIN_MAX);
	CK_RV rv = rw_session(c);
	if (rv != CKR_OK)
		return rv;
	if (c->app->login != CKU_SO)
		return CKR_USER_NOT_LOGGED_IN;
	const struct p11_persist *ps = c->t->env->persist;
	if (!ps)
		return pin_set(c->t, &c->t->user, pin.p, pin.len);
	rv = pin_len(pin.len);
	if (rv == CKR_OK)
		rv = ps->init_pin(ps->ctx, pin.p, pin.len);
	if (rv == CKR_OK)
		c->t->user.set = true;
	return rv;
}

static CK_RV op_set_pin(struct p11_call *c)
{
	struct wire_bytes old = p11_get_bytes(c->r, P11_PIN_MAX);
	struct wire_bytes new = p11_get_bytes(c->r, P11_PIN_MAX);
	CK_RV rv = rw_session(c);
	if (rv != CKR_OK)
		return rv;
	struct p11_pin *p = c->app->login == CKU_SO ? &c->t->so : &c->t->user;
	if (!p->set)
		return CKR_USER_PIN_NOT_INITIALIZED;
	const struct p11_persist *ps = c->t->env->persist;
	if (ps) {
		if (pin_len(new.len) != CKR_OK)
			return CKR_PIN_LEN_RANGE;
		return ps->set_pin(ps->ctx, c->app->login == CKU_SO ? CKU_SO : CKU_USER, old.p, old.len,
				   new.p, new.len);
	}
	if (!pin_ok(p, old.p, old.len))
		return CKR_PIN_INCORRECT;
	return pin_set(c->t, p, new.p, new.len);
}

/* ---- information */

static CK_RV op_token_info(struct p11_call *c)
{
	struct p11_token *t = c->t;
	uint32_t sessions = 0, rw = 0;
	for (unsigned i = 0; i < P11_SESSIONS_MAX; i++) {
		sessions += t->sessions[i].handle != 0;
		rw += t->sessions[i].handle && t->sessions[i].rw;
	}
	CK_FLAGS flags = CKF_RNG | CKF_LOGIN_REQUIRED | (t->initialized ? CKF_TOKEN_INITIALIZED : 0) |
			 (t->user.set ? CKF_USER_PIN_INITIALIZED : 0);
	if (t->env->persist)
		flags |= t->env->persist->pin_flags(t->env->persist->ctx);
	wire_put_raw(c->w, t->label, P11_LABEL);
	wire_put_raw(c->w, t->serial, P11_SERIAL);
	wire_put_u64(c->w, flags);
	wire_put_u32(c->w, sessions);
	wire_put_u32(c->w, rw);
	return CKR_OK;
}

static const struct {
	CK_MECHANISM_TYPE type;
	CK_FLAGS flags;
	CK_ULONG min, max; /* key sizes: in bits, but bytes for AES and HMAC (as PKCS#11 has them) */
} mechs[] = {
#define EC_FLAGS (CKF_EC_F_P | CKF_EC_NAMEDCURVE | CKF_EC_UNCOMPRESS)
#define EC(m, f) { m, (f) | EC_FLAGS, 256, 384 }
#define RSA(m, f) { m, f, P11_RSA_BITS_MIN, P11_RSA_BITS_MAX }
#define AES(m, f) { m, f, 16, 32 }
#define HMAC(m, min) { m, CKF_SIGN | CKF_VERIFY, min, P11_SECRET_MAX }
#define DIGEST(m) { m, CKF_DIGEST, 0, 0 }
	EC(CKM_EC_KEY_PAIR_GEN, CKF_GENERATE_KEY_PAIR),
	EC(CKM_ECDSA, CKF_SIGN | CKF_VERIFY),
	EC(CKM_ECDSA_SHA256, CKF_SIGN | CKF_VERIFY),
	EC(CKM_ECDSA_SHA384, CKF_SIGN | CKF_VERIFY),
	/* Ed25519 alone: 256 bits, the lower bound SoftHSM2 2.6.1 gives
	 * (its upper one, 456, is Ed448's). */
	{ CKM_EC_EDWARDS_KEY_PAIR_GEN, CKF_GENERATE_KEY_PAIR, 256, 256 },
	{ CKM_EDDSA, CKF_SIGN | CKF_VERIFY, 256, 256 },
	RSA(CKM_RSA_PKCS_KEY_PAIR_GEN, CKF_GENERATE_KEY_PAIR),
	RSA(CKM_RSA_PKCS, CKF_SIGN | CKF_VERIFY | CKF_ENCRYPT | CKF_DECRYPT),
	RSA(CKM_SHA256_RSA_PKCS, CKF_SIGN | CKF_VERIFY),
	RSA(CKM_SHA384_RSA_PKCS, CKF_SIGN | CKF_VERIFY),
	RSA(CKM_SHA512_RSA_PKCS, CKF_SIGN | CKF_VERIFY),
	RSA(CKM_RSA_PKCS_PSS, CKF_SIGN | CKF_VERIFY),
	RSA(CKM_SHA256_RSA_PKCS_PSS, CKF_SIGN | CKF_VERIFY),
	RSA(CKM_SHA384_RSA_PKCS_PSS, CKF_SIGN | CKF_VERIFY),
	RSA(CKM_SHA512_RSA_PKCS_PSS, CKF_SIGN | CKF_VERIFY),
	RSA(CKM_RSA_PKCS_OAEP, CKF_ENCRYPT | CKF_DECRYPT | CKF_WRAP | CKF_UNWRAP),
	AES(CKM_AES_KEY_GEN, CKF_GENERATE),
	AES(CKM_AES_ECB, CKF_ENCRYPT | CKF_DECRYPT),
	AES(CKM_AES_CBC, CKF_ENCRYPT | CKF_DECRYPT),
	AES(CKM_AES_CBC_PAD, CKF_ENCRYPT | CKF_DECRYPT),
	AES(CKM_AES_CTR, CKF_ENCRYPT | CKF_DECRYPT),
	AES(CKM_AES_GCM, CKF_ENCRYPT | CKF_DECRYPT),
	AES(CKM_AES_CMAC, CKF_SIGN | CKF_VERIFY),
	AES(CKM_AES_KEY_WRAP, CKF_WRAP | CKF_UNWRAP),
	AES(CKM_AES_KEY_WRAP_PAD, CKF_WRAP | CKF_UNWRAP),
	AES(CKM_AES_KEY_WRAP_KWP, CKF_WRAP | CKF_UNWRAP),
	EC(CKM_ECDH1_DERIVE, CKF_DERIVE),
	EC(CKM_ECDH1_COFACTOR_DERIVE, CKF_DERIVE),
	{ CKM_GENERIC_SECRET_KEY_GEN, CKF_GENERATE, 8, 8 * P11_SECRET_MAX },
	HMAC(CKM_SHA_1_HMAC, 20),
	HMAC(CKM_SHA256_HMAC, 32),
	HMAC(CKM_SHA384_HMAC, 48),
	HMAC(CKM_SHA512_HMAC, 64),
	DIGEST(CKM_SHA_1),
	DIGEST(CKM_SHA256),
	DIGEST(CKM_SHA384),
	DIGEST(CKM_SHA512),
#undef EC
#undef RSA
#undef AES
#undef HMAC
#undef DIGEST
};

static CK_RV op_mech_list(struct p11_call *c)
{
	uint32_t n = sizeof mechs / sizeof mechs[0];
	wire_put_u32(c->w, n);
	for (uint32_t i = 0; i < n; i++)
		wire_put_u64(c->w, mechs[i].type);
	return CKR_OK;
}

static CK_RV op_mech_info(struct p11_call *c)
{
	CK_MECHANISM_TYPE type = wire_get_u64(c->r);
	for (size_t i = 0; i < sizeof mechs / sizeof mechs[0]; i++) {
		if (mechs[i].type != type)
			continue;
		wire_put_u64(c->w, mechs[i].min);
		wire_put_u64(c->w, mechs[i].max);
		wire_put_u64(c->w, mechs[i].flags);
		return CKR_OK;
	}
	return CKR_MECHANISM_INVALID;
}

static CK_RV op_random(struct p11_call *c)
{
	uint32_t n = wire_get_u32(c->r);
	if (!c->s)
		return CKR_SESSION_HANDLE_INVALID;
	if (n > P11_RANDOM_MAX)
		return CKR_ARGUMENTS_BAD;
	br_hmac_drbg_context drbg;
	if (!c->t->env->seed(c->t->env->ctx, &drbg))
		return CKR_DEVICE_ERROR;
	uint8_t *out = wire_put_string_room(c->w, n);
	if (out)
		br_hmac_drbg_generate(&drbg, out, n);
	wipe(&drbg, sizeof drbg);
	return CKR_OK;
}

/* ---- dispatch */

static CK_RV op_ping(struct p11_call *c)
{
	wire_put_u32(c->w, 1);
	return CKR_OK;
}

static CK_RV op_finalize(struct p11_call *c)
{
	if (c->app) {
		close_app_sessions(c);
		wipe(c->app, sizeof *c->app);
		c->app->login = P11_NOBODY;
	}
	return CKR_OK;
}

static CK_RV op_close_all(struct p11_call *c)
{
	close_app_sessions(c);
	return CKR_OK;
}

/* Each operation's handler, and whether its arguments start with a
 * session handle (read into the call's s before the handler runs). */
static const struct {
	CK_RV (*handle)(struct p11_call *c);
	bool session;
} ops[P11_OP_MAX] = {
	[P11_OP_PING] = { op_ping, false },
	[P11_OP_FINALIZE] = { op_finalize, false },
	[P11_OP_TOKEN_INFO] = { op_token_info, false },
	[P11_OP_MECH_LIST] = { op_mech_list, false },
	[P11_OP_MECH_INFO] = { op_mech_info, false },
	[P11_OP_INIT_TOKEN] = { op_init_token, false },
	[P11_OP_OPEN_SESSION] = { op_open_session, false },
	[P11_OP_CLOSE_SESSION] = { op_close_session, true },
	[P11_OP_CLOSE_ALL] = { op_close_all, false },
	[P11_OP_SESSION_INFO] = { op_session_info, true },
	[P11_OP_LOGIN] = { op_login, true },
	[P11_OP_LOGOUT] = { op_logout, true },
	[P11_OP_INIT_PIN] = { op_init_pin, true },
	[P11_OP_SET_PIN] = { op_set_pin, true },
	[P11_OP_CREATE_OBJECT] = { p11_op_create, true },
	[P11_OP_DESTROY_OBJECT] = { p11_op_destroy, true },
	[P11_OP_GET_ATTRS] = { p11_op_get_attrs, true },
	[P11_OP_SET_ATTRS] = { p11_op_set_attrs, true },
	[P11_OP_FIND_INIT] = { p11_op_find_init, true },
	[P11_OP_FIND] = { p11_op_find, true },
	[P11_OP_FIND_FINAL] = { p11_op_find_final, true },
	[P11_OP_GENERATE_KEY_PAIR] = { p11_op_keygen, true },
	[P11_OP_SIGN_INIT] = { p11_op_sign_init, true },
	[P11_OP_SIGN] = { p11_op_sign, true },
	[P11_OP_SIGN_UPDATE] = { p11_op_sign_update, true },
	[P11_OP_SIGN_FINAL] = { p11_op_sign_final, true },
	[P11_OP_GENERATE_RANDOM] = { op_random, true },
	[P11_OP_DECRYPT_INIT] = { p11_op_decrypt_init, true },
	[P11_OP_DECRYPT] = { p11_op_decrypt, true },
	[P11_OP_SIGN_INIT_SIGN] = { p11_op_sign_init_sign, true },
	[P11_OP_GENERATE_KEY] = { p11_op_generate_key, true },
	[P11_OP_ENCRYPT_INIT] = { p11_op_encrypt_init, true },
	[P11_OP_ENCRYPT] = { p11_op_encrypt, true },
	[P11_OP_ENCRYPT_UPDATE] = { p11_op_encrypt_update, true },
	[P11_OP_ENCRYPT_FINAL] = { p11_op_encrypt_final, true },
	[P11_OP_DECRYPT_UPDATE] = { p11_op_decrypt_update, true },
	[P11_OP_DECRYPT_FINAL] = { p11_op_decrypt_final, true },
	[P11_OP_DIGEST_INIT] = { p11_op_digest_init, true },
	[P11_OP_DIGEST] = { p11_op_digest, true },
	[P11_OP_DIGEST_UPDATE] = { p11_op_digest_update, true },
	[P11_OP_DIGEST_KEY] = { p11_op_digest_key, true },
	[P11_OP_DIGEST_FINAL] = { p11_op_digest_final, true },
	[P11_OP_VERIFY_INIT] = { p11_op_verify_init, true },
	[P11_OP_VERIFY] = { p11_op_verify, true },
	[P11_OP_VERIFY_UPDATE] = { p11_op_verify_update, true },
	[P11_OP_VERIFY_FINAL] = { p11_op_verify_final, true },
	[P11_OP_COPY_OBJECT] = { p11_op_copy, true },
	[P11_OP_OBJECT_SIZE] = { p11_op_object_size, true },
	[P11_OP_WRAP_KEY] = { p11_op_wrap, true },
	[P11_OP_UNWRAP_KEY] = { p11_op_unwrap, true },
	[P11_OP_DERIVE_KEY] = { p11_op_derive, true },
	[P11_OP_ENCRYPT_INIT_ENCRYPT] = { p11_op_encrypt_init_encrypt, true },
	[P11_OP_DECRYPT_INIT_DECRYPT] = { p11_op_decrypt_init_decrypt, true },
};

/* The calls that change token objects (their change is stored before the
 * reply), and those whose results go out with CKR_BUFFER_TOO_SMALL too. */
static bool changes_objects(uint8_t op)
{
	return op == P11_OP_CREATE_OBJECT || op == P11_OP_DESTROY_OBJECT || op == P11_OP_SET_ATTRS ||
	       op == P11_OP_GENERATE_KEY_PAIR || op == P11_OP_GENERATE_KEY || op == P11_OP_COPY_OBJECT ||
	       op == P11_OP_UNWRAP_KEY || op == P11_OP_DERIVE_KEY;
}

static bool sized_result(uint8_t op)
{
	switch (op) {
	case P11_OP_GET_ATTRS: case P11_OP_SIGN: case P11_OP_SIGN_FINAL: case P11_OP_SIGN_INIT_SIGN:
	case P11_OP_DECRYPT: case P11_OP_DECRYPT_UPDATE: case P11_OP_DECRYPT_FINAL: case P11_OP_ENCRYPT:
	case P11_OP_ENCRYPT_UPDATE: case P11_OP_ENCRYPT_FINAL: case P11_OP_DIGEST: case P11_OP_DIGEST_FINAL:
	case P11_OP_WRAP_KEY: case P11_OP_ENCRYPT_INIT_ENCRYPT: case P11_OP_DECRYPT_INIT_DECRYPT:
		return true;
	default:
		return false;
	}
}

size_t p11_token_handle(struct p11_token *t, const uint8_t *req, size_t len, uint8_t *out)
{
	struct wire_reader r;
	struct wire_writer w;
	wire_reader_init(&r, req, len);
	uint8_t version = wire_get_u8(&r), op = wire_get_u8(&r);
	const uint8_t *id = wire_get_raw(&r, P11_APP_ID);
	if (r.bad || version != P11_VERSION || op >= P11_OP_MAX || !ops[op].handle)
		return 0;
	t->requests++;
	wire_writer_init(&w, out, P11_BODY_MAX);
	p11_put_reply(&w, op, CKR_OK);
	size_t head = w.len;
	struct p11_call c = { t, app_get(t, id, op != P11_OP_FINALIZE), NULL, &r, &w };
	if (ops[op].session)
		c.s = p11_session_get(&c, wire_get_u64(&r));
	CK_RV rv = ops[op].handle(&c);
	/* A request cut short, or with bytes left over, is malformed,
	 * whatever the handler made of it (handlers act only on arguments
	 * read whole). A reply that did not fit is an error too. */
	if (r.bad || (rv == CKR_OK && !wire_done(&r)))
		rv = CKR_ARGUMENTS_BAD;
	if (rv == CKR_OK && w.bad)
		rv = CKR_DEVICE_MEMORY;
	/* A change of token objects is stored before the reply says so; if
	 * it cannot be, the change is undone and the reply says why. */
	const struct p11_persist *ps = t->env->persist;
	if (ps && changes_objects(op)) {
		CK_RV crv = ps->commit(ps->ctx, t);
		if (rv == CKR_OK)
			rv = crv;
	}
	/* Results go out with CKR_OK, and with the few other values that
	 * carry them (p11_wire.h); otherwise the reply is the CK_RV alone. */
	bool data = rv == CKR_OK || (sized_result(op) && !w.bad && w.len > head);
	if (!data) {
		wipe(out + head, w.len - head);
		w.len = head;
	}
	if (rv != CKR_OK)
		t->refused++;
	struct wire_writer hw;
	wire_writer_init(&hw, out, head);
	p11_put_reply(&hw, op, rv);
	return w.len;
}

/* SPDX-License-Identifier: ISC */
/*
 * Request handling: see agent.h. The behaviour follows OpenSSH's agent
 * where the draft leaves room: a locked agent lists no keys and refuses
 * everything but UNLOCK; adding a key it already holds replaces its
 * comment and lifetime; a lifetime counts from the add; signature flags
 * pick an RSA key's hash (SHA-256 first, as OpenSSH's agent does) and do
 * not apply to ECDSA or Ed25519, which ignore them.
 * This agent refuses what it cannot do: key types other than
 * ecdsa-sha2-nistp256, ssh-ed25519 and ssh-rsa, RSA signatures with SHA-1
 * (a sign request with neither SHA-2 flag), the confirm constraint (there
 * is no one to ask inside a guest), key constraint extensions, and every
 * message type it does not know.
 */
#include "agent.h"

#include <string.h>

#include <bearssl/bearssl_hash.h>

#include "agent_ed25519.h"
#include "agent_p256.h"
#include "agent_rsa.h"
#include "wipe.h"

#define NS_PER_S 1000000000ull
/* Wait after a wrong unlock passphrase: this much per failure so far, up
 * to ten times as much. */
#define UNLOCK_DELAY_NS (100ull * 1000000ull)

void agent_init(struct agent *a, const struct agent_env *env)
{
	memset(a, 0, sizeof *a);
	keys_init(&a->keys);
	a->env = env;
}

uint64_t agent_reap(struct agent *a)
{
	keys_reap(&a->keys, a->env->now_ns(a->env->ctx));
	return keys_next_expiry(&a->keys);
}

static size_t status(struct agent *a, uint8_t *out, uint8_t code)
{
	if (code != SSH_AGENT_SUCCESS)
		a->refused++;
	out[0] = code;
	return 1;
}

static size_t finish(struct agent *a, struct wire_writer *w, uint8_t *out)
{
	/* Cannot happen with AGENT_REPLY_MAX; a failure beats a cut reply. */
	return w->bad ? status(a, out, SSH_AGENT_FAILURE) : w->len;
}

/* Expiry time for a lifetime constraint, saturating. */
static uint64_t expiry(struct agent *a, const struct agent_constraints *c)
{
	uint64_t now = a->env->now_ns(a->env->ctx);
	uint64_t life = (uint64_t)c->lifetime_s * NS_PER_S;
	return now > UINT64_MAX - life ? UINT64_MAX : now + life;
}

static size_t identities(struct agent *a, uint8_t *out)
{
	struct wire_writer w;
	wire_writer_init(&w, out, AGENT_REPLY_MAX);
	wire_put_u8(&w, SSH_AGENT_IDENTITIES_ANSWER);
	unsigned n = a->lock.locked ? 0 : a->keys.n;
	wire_put_u32(&w, n);
	for (unsigned i = 0; i < n; i++) {
		const struct agent_key *k = &a->keys.slot[i];
		size_t blob = wire_begin_string(&w);
		wire_put_key_blob(&w, k->type, k->point);
		wire_end_string(&w, blob);
		wire_put_string(&w, k->comment, k->comment_len);
	}
	return finish(a, &w, out);
}

/* The held key a request's public key blob names, or NULL. */
static struct agent_key *find(struct agent *a, struct wire_bytes blob)
{
	uint8_t q[AGENT_PUB_MAX];
	enum agent_key_type t = wire_key_blob_parse(blob, q);
	return t == AGENT_KEY_NONE ? NULL : keys_find(&a->keys, t, q);
}

/* An RSA signature with the hash the flags ask for (SHA-256 if both). */
static bool sign_rsa(const struct agent_key *k, const struct agent_request *req,
		     struct wire_writer *w)
{
	uint32_t flags = req->u.sign.flags;
	if (!(flags & (SSH_AGENT_RSA_SHA2_256 | SSH_AGENT_RSA_SHA2_512)))
		return false; /* ssh-rsa, SHA-1 */
	bool sha512 = !(flags & SSH_AGENT_RSA_SHA2_256);
	uint8_t sig[AGENT_RSA_N_MAX];
	size_t len;
	if (!rsa_sign(k->d, k->point, sha512, req->u.sign.data.p, req->u.sign.data.len, sig, &len))
		return false;
	wire_put_rsa_signature(w, sha512 ? AGENT_RSA_SHA512_NAME : AGENT_RSA_SHA256_NAME, sig, len);
	return true;
}

static bool sign_with(const struct agent_key *k, const struct agent_request *req,
		      struct wire_writer *w)
{
	if (k->type == AGENT_KEY_RSA)
		return sign_rsa(k, req, w);
	struct wire_bytes data = req->u.sign.data;
	uint8_t sig[64];
	if (!(k->type == AGENT_KEY_ED25519 ? ed25519_sign(k->d, k->point, data.p, data.len, sig)
					   : p256_sign(k->d, data.p, data.len, sig)))
		return false;
	wire_put_signature(w, k->type, sig);
	return true;
}

static size_t sign(struct agent *a, const struct agent_request *req, uint8_t *out)
{
	struct agent_key *k = find(a, req->u.sign.key_blob);
	struct wire_writer w;
	wire_writer_init(&w, out, AGENT_REPLY_MAX);
	wire_put_u8(&w, SSH_AGENT_SIGN_RESPONSE);
	if (!k || !sign_with(k, req, &w))
		return status(a, out, SSH_AGENT_FAILURE);
	a->signatures++;
	return finish(a, &w, out);
}

/* Key types this host's CPU can run in reasonable time (agent.h). */
static bool runs_here(const struct agent *a, enum agent_key_type t)
{
	return t == AGENT_KEY_P256 || a->env->native_cpu;
}

/* The public part of the secret d; false if d is no valid secret. */
static bool public_of(enum agent_key_type t, const uint8_t d[AGENT_SECRET_MAX],
		      uint8_t q[AGENT_PUB_MAX])
{
	memset(q, 0, AGENT_PUB_MAX);
	if (t == AGENT_KEY_ED25519)
		return ed25519_public(d, q);
	return t == AGENT_KEY_P256 && p256_public(d, q);
}

static size_t add(struct agent *a, const struct agent_request *req, uint8_t *out)
{
	const struct agent_constraints *c = &req->u.add.c;
	enum agent_key_type t = req->u.add.key_type;
	if (c->confirm || !runs_here(a, t))
		return status(a, out, SSH_AGENT_FAILURE);
	/* P-256 and Ed25519: the secret, left-padded to 32 bytes (a P-256
	 * scalar may be shorter); the given public part must be its own, so
	 * what the agent lists is what it signs with. RSA: its fields must
	 * make a key that signs and verifies. */
	uint8_t d[AGENT_SECRET_MAX], q[AGENT_PUB_MAX];
	memset(d, 0, sizeof d);
	bool ok;
	if (t == AGENT_KEY_RSA) {
		ok = rsa_import(&req->u.add.rsa, d, q);
	} else {
		memcpy(d + AGENT_P256_SCALAR - req->u.add.d.len, req->u.add.d.p, req->u.add.d.len);
		ok = public_of(t, d, q) && !memcmp(q, req->u.add.point, agent_pub_len(t));
	}
	ok = ok && keys_add(&a->keys, t, d, q, req->u.add.comment.p, req->u.add.comment.len,
			   c->has_lifetime, c->has_lifetime ? expiry(a, c) : 0) == 0;
	wipe(d, sizeof d);
	return status(a, out, ok ? SSH_AGENT_SUCCESS : SSH_AGENT_FAILURE);
}

static size_t lock(struct agent *a, const struct agent_request *req, uint8_t *out)
{
	struct wire_bytes pass = req->u.lock.pass;
	bool ok;
	if (req->type == SSH_AGENTC_LOCK) {
		br_hmac_drbg_context drbg;
		uint8_t salt[AGENT_LOCK_SALT];
		ok = a->env->seed(a->env->ctx, &drbg);
		if (ok) {
			br_hmac_drbg_generate(&drbg, salt, sizeof salt);
			ok = lock_engage(&a->lock, salt, pass.p, pass.len);
		}
		wipe(&drbg, sizeof drbg);
	} else if (!a->lock.locked) {
		ok = false;
	} else {
		ok = lock_release(&a->lock, pass.p, pass.len);
		if (ok) {
			a->failed_unlocks = 0;
		} else if (a->env->delay) {
			/* Slows down guessing through the socket. */
			if (a->failed_unlocks < 10)
				a->failed_unlocks++;
			a->env->delay(a->env->ctx, a->failed_unlocks * UNLOCK_DELAY_NS);
		}
	}
	return status(a, out, ok ? SSH_AGENT_SUCCESS : SSH_AGENT_FAILURE);
}

/* Extension replies: EXTENSION_RESPONSE, the extension's name, data. */
static void ext_reply(struct wire_writer *w, uint8_t *out, const char *name)
{
	wire_writer_init(w, out, AGENT_REPLY_MAX);
	wire_put_u8(w, SSH_AGENT_EXTENSION_RESPONSE);
	wire_put_cstring(w, name);
}

static bool make_key(enum agent_key_type t, br_hmac_drbg_context *drbg,
		     uint8_t d[AGENT_SECRET_MAX], uint8_t q[AGENT_PUB_MAX])
{
	switch (t) {
	case AGENT_KEY_ED25519:
		return ed25519_keygen(&drbg->vtable, d, q);
	case AGENT_KEY_RSA:
		return rsa_keygen(&drbg->vtable, AGENT_RSA_KEYGEN_BITS, d, q);
	default:
		return p256_keygen(&drbg->vtable, d, q);
	}
}

static size_t keygen(struct agent *a, struct wire_bytes contents, uint8_t *out)
{
	struct agent_keygen kg;
	if (agent_parse_keygen(contents, &kg) != AGENT_PARSE_OK || kg.c.confirm ||
	    !runs_here(a, kg.key_type))
		return status(a, out, SSH_AGENT_EXTENSION_FAILURE);
	br_hmac_drbg_context drbg;
	uint8_t d[AGENT_SECRET_MAX], q[AGENT_PUB_MAX];
	memset(d, 0, sizeof d);
	memset(q, 0, sizeof q);
	bool ok = a->env->seed(a->env->ctx, &drbg) && make_key(kg.key_type, &drbg, d, q) &&
		  keys_add(&a->keys, kg.key_type, d, q, kg.comment.p, kg.comment.len,
			   kg.c.has_lifetime, kg.c.has_lifetime ? expiry(a, &kg.c) : 0) == 0;
	/* The DRBG state could regenerate the key. */
	wipe(&drbg, sizeof drbg);
	wipe(d, sizeof d);
	if (!ok)
		return status(a, out, SSH_AGENT_EXTENSION_FAILURE);
	struct wire_writer w;
	ext_reply(&w, out, AGENT_EXT_KEYGEN);
	size_t blob = wire_begin_string(&w);
	wire_put_key_blob(&w, kg.key_type, q);
	wire_end_string(&w, blob);
	return finish(a, &w, out);
}

/* Test hook: SHA-256 of 32 bytes of a held key's secret, so a test can recognise the
 * key's bytes without the key ever leaving the guest. */
static size_t keyhash(struct agent *a, struct wire_bytes contents, uint8_t *out)
{
	struct wire_reader r;
	wire_reader_init(&r, contents.p, contents.p ? contents.len : 0);
	struct wire_bytes blob = wire_get_string(&r);
	struct agent_key *k = wire_done(&r) ? find(a, blob) : NULL;
	if (!k)
		return status(a, out, SSH_AGENT_EXTENSION_FAILURE);
	br_sha256_context c;
	uint8_t h[32];
	br_sha256_init(&c);
	/* 32 bytes: the scalar or seed; for RSA the top 32 bytes of p (the
	 * secret's first field, left-padded with zeros). */
	const uint8_t *d = k->d;
	while (k->type == AGENT_KEY_RSA && d < k->d + AGENT_RSA_FACTOR_MAX - 32 && !*d)
		d++;
	br_sha256_update(&c, d, 32);
	br_sha256_out(&c, h);
	wipe(&c, sizeof c);
	struct wire_writer w;
	ext_reply(&w, out, AGENT_EXT_KEYHASH);
	wire_put_string(&w, h, sizeof h);
	return finish(a, &w, out);
}

static size_t extension(struct agent *a, const struct agent_request *req, uint8_t *out)
{
	struct wire_bytes name = req->u.ext.name;
	if (wire_bytes_eq(name, AGENT_EXT_QUERY)) {
		if (req->u.ext.contents.len)
			return status(a, out, SSH_AGENT_EXTENSION_FAILURE);
		struct wire_writer w;
		ext_reply(&w, out, AGENT_EXT_QUERY);
		wire_put_cstring(&w, AGENT_EXT_KEYGEN);
		if (a->env->test_hooks)
			wire_put_cstring(&w, AGENT_EXT_KEYHASH);
		return finish(a, &w, out);
	}
	if (wire_bytes_eq(name, AGENT_EXT_KEYGEN))
		return keygen(a, req->u.ext.contents, out);
	if (a->env->test_hooks && wire_bytes_eq(name, AGENT_EXT_KEYHASH))
		return keyhash(a, req->u.ext.contents, out);
	/* Unknown extensions (session-bind@openssh.com among them) get the
	 * generic failure, as the draft asks. */
	return status(a, out, SSH_AGENT_FAILURE);
}

size_t agent_handle(struct agent *a, const uint8_t *msg, size_t len, uint8_t *out)
{
	struct agent_request req;
	a->requests++;
	agent_reap(a);
	if (agent_parse_request(msg, len, &req) != AGENT_PARSE_OK)
		return status(a, out, SSH_AGENT_FAILURE);
	if (a->lock.locked && req.type != SSH_AGENTC_UNLOCK)
		return req.type == SSH_AGENTC_REQUEST_IDENTITIES ? identities(a, out)
								 : status(a, out, SSH_AGENT_FAILURE);
	switch (req.type) {
	case SSH_AGENTC_REQUEST_IDENTITIES:
		return identities(a, out);
	case SSH_AGENTC_SIGN_REQUEST:
		return sign(a, &req, out);
	case SSH_AGENTC_ADD_IDENTITY:
	case SSH_AGENTC_ADD_ID_CONSTRAINED:
		return add(a, &req, out);
	case SSH_AGENTC_REMOVE_IDENTITY: {
		struct agent_key *k = find(a, req.u.remove.key_blob);
		return status(a, out, k && keys_remove(&a->keys, k->type, k->point)
					      ? SSH_AGENT_SUCCESS
					      : SSH_AGENT_FAILURE);
	}
	case SSH_AGENTC_REMOVE_ALL_IDENTITIES:
		keys_remove_all(&a->keys);
		return status(a, out, SSH_AGENT_SUCCESS);
	case SSH_AGENTC_LOCK:
	case SSH_AGENTC_UNLOCK:
		return lock(a, &req, out);
	case SSH_AGENTC_EXTENSION:
		return extension(a, &req, out);
	default:
		return status(a, out, SSH_AGENT_FAILURE);
	}
}

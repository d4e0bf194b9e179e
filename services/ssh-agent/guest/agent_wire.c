/* SPDX-License-Identifier: ISC */
/* The ssh-agent wire format: see agent_wire.h. Its integers, strings and
 * frames are services/common's codec (wire.h), which checks every length a
 * client sends against what is left before anything is used. */
#include "agent_wire.h"

#include <string.h>

void wire_put_mpint(struct wire_writer *w, const uint8_t *be, size_t n)
{
	while (n && be[0] == 0)
		be++, n--;
	bool pad = n && (be[0] & 0x80);
	if (n > UINT32_MAX - 1) {
		w->bad = true;
		return;
	}
	wire_put_u32(w, (uint32_t)(n + pad));
	if (pad)
		wire_put_u8(w, 0);
	wire_put_raw(w, be, n);
}

uint32_t agent_frame_len(const uint8_t hdr[4])
{
	return wire_frame_len(hdr, AGENT_MSG_MAX);
}

void wire_put_p256_blob(struct wire_writer *w, const uint8_t point[AGENT_P256_POINT])
{
	wire_put_cstring(w, AGENT_P256_NAME);
	wire_put_cstring(w, AGENT_P256_CURVE);
	wire_put_string(w, point, AGENT_P256_POINT);
}

/* string curve, string point: the part of a P-256 key after its name. */
static const uint8_t *get_p256_point(struct wire_reader *r)
{
	struct wire_bytes curve = wire_get_string(r);
	struct wire_bytes q = wire_get_string(r);
	if (r->bad || !wire_bytes_eq(curve, AGENT_P256_CURVE) || q.len != AGENT_P256_POINT ||
	    q.p[0] != 0x04)
		return NULL;
	return q.p;
}

const uint8_t *wire_p256_blob_point(struct wire_bytes blob)
{
	struct wire_reader r;
	wire_reader_init(&r, blob.p, blob.p ? blob.len : 0);
	if (!wire_bytes_eq(wire_get_string(&r), AGENT_P256_NAME))
		return NULL;
	const uint8_t *q = get_p256_point(&r);
	return q && wire_done(&r) ? q : NULL;
}

void wire_put_p256_signature(struct wire_writer *w, const uint8_t rs[64])
{
	size_t outer = wire_begin_string(w);
	wire_put_cstring(w, AGENT_P256_NAME);
	size_t inner = wire_begin_string(w);
	wire_put_mpint(w, rs, 32);
	wire_put_mpint(w, rs + 32, 32);
	wire_end_string(w, inner);
	wire_end_string(w, outer);
}

size_t agent_pub_len(enum agent_key_type t)
{
	switch (t) {
	case AGENT_KEY_P256:
		return AGENT_P256_POINT;
	case AGENT_KEY_ED25519:
		return AGENT_ED25519_PUB;
	case AGENT_KEY_RSA:
		return AGENT_RSA_PUB;
	default:
		return 0;
	}
}

const char *agent_key_name(enum agent_key_type t)
{
	switch (t) {
	case AGENT_KEY_P256:
		return AGENT_P256_NAME;
	case AGENT_KEY_ED25519:
		return AGENT_ED25519_NAME;
	case AGENT_KEY_RSA:
		return AGENT_RSA_NAME;
	default:
		return "";
	}
}

static enum agent_key_type key_type_of(struct wire_bytes name)
{
	for (enum agent_key_type t = AGENT_KEY_P256; t <= AGENT_KEY_RSA; t++)
		if (wire_bytes_eq(name, agent_key_name(t)))
			return t;
	return AGENT_KEY_NONE;
}

void wire_put_key_blob(struct wire_writer *w, enum agent_key_type t, const uint8_t *pub)
{
	if (t == AGENT_KEY_P256) {
		wire_put_p256_blob(w, pub);
	} else if (t == AGENT_KEY_ED25519) {
		wire_put_cstring(w, AGENT_ED25519_NAME);
		wire_put_string(w, pub, AGENT_ED25519_PUB);
	} else if (t == AGENT_KEY_RSA) {
		wire_put_cstring(w, AGENT_RSA_NAME);
		wire_put_mpint(w, pub, AGENT_RSA_E_MAX);
		wire_put_mpint(w, pub + AGENT_RSA_E_MAX, AGENT_RSA_N_MAX);
	} else {
		w->bad = true;
	}
}

/* string A: the part of an Ed25519 key after its name. */
static const uint8_t *get_ed25519_pub(struct wire_reader *r)
{
	struct wire_bytes a = wire_get_string(r);
	return !r->bad && a.len == AGENT_ED25519_PUB ? a.p : NULL;
}

/* A positive mpint of at most max bytes, in canonical form (no
 * superfluous leading zero); returned without its sign byte. */
static struct wire_bytes get_positive_mpint(struct wire_reader *r, size_t max, bool *ok)
{
	struct wire_bytes m = wire_get_string(r);
	*ok = false;
	if (r->bad || m.len == 0 || (m.p[0] & 0x80))
		return m; /* zero or negative */
	if (m.p[0] == 0) {
		if (m.len == 1 || !(m.p[1] & 0x80))
			return m; /* a leading zero that is not a sign byte */
		m.p++, m.len--;
	}
	*ok = m.len <= max;
	return m;
}

/* mpint e, mpint n: RSA's public part, as in its key blob and first in
 * its private key (there n comes first: n_first). True if e is odd, at
 * least 3 and at most AGENT_RSA_E_MAX bytes, and n is odd and of
 * AGENT_RSA_MIN_BITS..AGENT_RSA_MAX_BITS bits. */
static bool get_rsa_public(struct wire_reader *r, bool n_first, struct wire_bytes *e,
			   struct wire_bytes *n)
{
	bool e_ok, n_ok;
	if (n_first) {
		*n = get_positive_mpint(r, AGENT_RSA_N_MAX, &n_ok);
		*e = get_positive_mpint(r, AGENT_RSA_E_MAX, &e_ok);
	} else {
		*e = get_positive_mpint(r, AGENT_RSA_E_MAX, &e_ok);
		*n = get_positive_mpint(r, AGENT_RSA_N_MAX, &n_ok);
	}
	return e_ok && n_ok && (e->p[e->len - 1] & 1) && (e->len > 1 || e->p[0] >= 3) &&
	       (n->p[n->len - 1] & 1) &&
	       (n->len > AGENT_RSA_MIN_BITS / 8 || (n->len == AGENT_RSA_MIN_BITS / 8 && (n->p[0] & 0x80)));
}

void wire_rsa_pub_layout(struct wire_bytes e, struct wire_bytes n, uint8_t pub[AGENT_RSA_PUB])
{
	memset(pub, 0, AGENT_RSA_PUB);
	memcpy(pub + AGENT_RSA_E_MAX - e.len, e.p, e.len);
	memcpy(pub + AGENT_RSA_PUB - n.len, n.p, n.len);
}

enum agent_key_type wire_key_blob_parse(struct wire_bytes blob, uint8_t pub[AGENT_PUB_MAX])
{
	struct wire_reader r;
	wire_reader_init(&r, blob.p, blob.p ? blob.len : 0);
	enum agent_key_type t = key_type_of(wire_get_string(&r));
	const uint8_t *p = NULL;
	struct wire_bytes e, n;
	bool rsa_ok = t == AGENT_KEY_RSA && get_rsa_public(&r, false, &e, &n);
	if (t == AGENT_KEY_P256)
		p = get_p256_point(&r);
	else if (t == AGENT_KEY_ED25519)
		p = get_ed25519_pub(&r);
	if ((!p && !rsa_ok) || !wire_done(&r))
		return AGENT_KEY_NONE;
	memset(pub, 0, AGENT_PUB_MAX);
	if (rsa_ok)
		wire_rsa_pub_layout(e, n, pub);
	else
		memcpy(pub, p, agent_pub_len(t));
	return t;
}

void wire_put_signature(struct wire_writer *w, enum agent_key_type t, const uint8_t sig[64])
{
	if (t == AGENT_KEY_P256) {
		wire_put_p256_signature(w, sig);
		return;
	}
	if (t != AGENT_KEY_ED25519) {
		w->bad = true;
		return;
	}
	size_t outer = wire_begin_string(w);
	wire_put_cstring(w, AGENT_ED25519_NAME);
	wire_put_string(w, sig, 64);
	wire_end_string(w, outer);
}

void wire_put_rsa_signature(struct wire_writer *w, const char *alg, const uint8_t *sig,
			    size_t len)
{
	size_t outer = wire_begin_string(w);
	wire_put_cstring(w, alg);
	wire_put_string(w, sig, len);
	wire_end_string(w, outer);
}

static enum agent_parse get_constraints(struct wire_reader *r, struct agent_constraints *c)
{
	memset(c, 0, sizeof *c);
	while (r->left && !r->bad) {
		switch (wire_get_u8(r)) {
		case SSH_AGENT_CONSTRAIN_LIFETIME:
			if (c->has_lifetime)
				return AGENT_PARSE_MALFORMED;
			c->lifetime_s = wire_get_u32(r);
			c->has_lifetime = true;
			break;
		case SSH_AGENT_CONSTRAIN_CONFIRM:
			if (c->confirm)
				return AGENT_PARSE_MALFORMED;
			c->confirm = true;
			break;
		case SSH_AGENT_CONSTRAIN_EXTENSION:
			/* Its contents can only be skipped by knowing it: none known. */
			wire_get_string(r);
			return r->bad ? AGENT_PARSE_MALFORMED : AGENT_PARSE_UNSUPPORTED;
		default:
			return AGENT_PARSE_UNSUPPORTED;
		}
	}
	return wire_done(r) ? AGENT_PARSE_OK : AGENT_PARSE_MALFORMED;
}

/* Ed25519's private part, as OpenSSH sends it: string A, string
 * (seed || A). Sets the public key and the secret; false if malformed or
 * if the two copies of A differ. */
static bool get_ed25519_private(struct wire_reader *r, struct agent_request *req)
{
	const uint8_t *a = get_ed25519_pub(r);
	struct wire_bytes sk = wire_get_string(r);
	if (!a || sk.len != AGENT_ED25519_SEED + AGENT_ED25519_PUB ||
	    memcmp(sk.p + AGENT_ED25519_SEED, a, AGENT_ED25519_PUB))
		return false;
	req->u.add.point = a;
	req->u.add.d.p = sk.p;
	req->u.add.d.len = AGENT_ED25519_SEED;
	return true;
}

/* RSA's private part, as OpenSSH sends it: mpint n, e, d, iqmp, p, q. */
static bool get_rsa_private(struct wire_reader *r, struct agent_rsa_fields *k)
{
	bool d_ok, iqmp_ok, p_ok, q_ok;
	bool pub_ok = get_rsa_public(r, true, &k->e, &k->n);
	k->d = get_positive_mpint(r, AGENT_RSA_N_MAX, &d_ok);
	k->iqmp = get_positive_mpint(r, AGENT_RSA_FACTOR_MAX, &iqmp_ok);
	k->p = get_positive_mpint(r, AGENT_RSA_FACTOR_MAX, &p_ok);
	k->q = get_positive_mpint(r, AGENT_RSA_FACTOR_MAX, &q_ok);
	return pub_ok && d_ok && iqmp_ok && p_ok && q_ok;
}

static enum agent_parse parse_add(struct wire_reader *r, struct agent_request *req)
{
	struct wire_bytes type = wire_get_string(r);
	if (r->bad)
		return AGENT_PARSE_MALFORMED;
	/* The rest's layout depends on the type. */
	req->u.add.key_type = key_type_of(type);
	bool d_ok;
	if (req->u.add.key_type == AGENT_KEY_P256) {
		req->u.add.point = get_p256_point(r);
		req->u.add.d = get_positive_mpint(r, AGENT_P256_SCALAR, &d_ok);
	} else if (req->u.add.key_type == AGENT_KEY_ED25519) {
		d_ok = get_ed25519_private(r, req);
	} else if (req->u.add.key_type == AGENT_KEY_RSA) {
		d_ok = get_rsa_private(r, &req->u.add.rsa);
	} else {
		return AGENT_PARSE_UNSUPPORTED;
	}
	req->u.add.comment = wire_get_string(r);
	if (r->bad || (!req->u.add.point && req->u.add.key_type != AGENT_KEY_RSA) || !d_ok || req->u.add.comment.len > AGENT_COMMENT_MAX)
		return AGENT_PARSE_MALFORMED;
	if (req->type == SSH_AGENTC_ADD_ID_CONSTRAINED)
		return get_constraints(r, &req->u.add.c);
	memset(&req->u.add.c, 0, sizeof req->u.add.c);
	return wire_done(r) ? AGENT_PARSE_OK : AGENT_PARSE_MALFORMED;
}

enum agent_parse agent_parse_request(const uint8_t *msg, size_t len, struct agent_request *req)
{
	struct wire_reader r;
	memset(req, 0, sizeof *req);
	wire_reader_init(&r, msg, msg ? len : 0);
	req->type = wire_get_u8(&r);
	if (r.bad)
		return AGENT_PARSE_MALFORMED;
	switch (req->type) {
	case SSH_AGENTC_REQUEST_IDENTITIES:
	case SSH_AGENTC_REMOVE_ALL_IDENTITIES:
		break;
	case SSH_AGENTC_SIGN_REQUEST:
		req->u.sign.key_blob = wire_get_string(&r);
		req->u.sign.data = wire_get_string(&r);
		req->u.sign.flags = wire_get_u32(&r);
		break;
	case SSH_AGENTC_ADD_IDENTITY:
	case SSH_AGENTC_ADD_ID_CONSTRAINED:
		return parse_add(&r, req);
	case SSH_AGENTC_REMOVE_IDENTITY:
		req->u.remove.key_blob = wire_get_string(&r);
		break;
	case SSH_AGENTC_LOCK:
	case SSH_AGENTC_UNLOCK:
		req->u.lock.pass = wire_get_string(&r);
		if (req->u.lock.pass.len > AGENT_PASS_MAX)
			return AGENT_PARSE_MALFORMED;
		break;
	case SSH_AGENTC_EXTENSION:
		/* OpenSSH's form: the contents follow the name unwrapped. */
		req->u.ext.name = wire_get_string(&r);
		req->u.ext.contents = wire_get_rest(&r);
		break;
	default:
		return AGENT_PARSE_UNSUPPORTED;
	}
	return wire_done(&r) ? AGENT_PARSE_OK : AGENT_PARSE_MALFORMED;
}

enum agent_parse agent_parse_keygen(struct wire_bytes contents, struct agent_keygen *kg)
{
	struct wire_reader r;
	memset(kg, 0, sizeof *kg);
	wire_reader_init(&r, contents.p, contents.p ? contents.len : 0);
	struct wire_bytes type = wire_get_string(&r);
	kg->comment = wire_get_string(&r);
	if (r.bad || kg->comment.len > AGENT_COMMENT_MAX)
		return AGENT_PARSE_MALFORMED;
	kg->key_type = key_type_of(type);
	if (kg->key_type == AGENT_KEY_NONE)
		return AGENT_PARSE_UNSUPPORTED;
	return get_constraints(&r, &kg->c);
}

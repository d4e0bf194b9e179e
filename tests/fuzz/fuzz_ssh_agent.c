/* SPDX-License-Identifier: ISC */
/*
 * The ssh-agent guest's message handling (services/ssh-agent) on hostile
 * input: the input is a client's byte stream, cut into frames the way the
 * guest cuts it (agent_frame_len), each frame handled by agent_handle on
 * one agent with a clock that moves a second per message. Invariants
 * checked after every message, besides the sanitizers: the reply fits and
 * is not empty, no slot past the last key holds a byte (removed keys are
 * wiped), a locked agent lists no key, and each held key's public key
 * blob (P-256, Ed25519 or RSA) parses back to that key. The parser is also
 * run on each frame alone (an add's secret within AGENT_SECRET_MAX and,
 * like RSA's fields, inside the message), and on an extension's contents
 * as keygen arguments.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t clock_ns;

static uint64_t now(void *ctx)
{
	return clock_ns;
}

static bool seed(void *ctx, br_hmac_drbg_context *d)
{
	br_hmac_drbg_init(d, &br_sha256_vtable, "fuzz", 4);
	return true;
}

static const struct agent_env env = { now, seed, NULL, NULL, true, true };
static struct agent ag;
static uint8_t out[AGENT_REPLY_MAX];

static void check_wiped(void)
{
	const uint8_t *p = (const uint8_t *)&ag.keys.slot[ag.keys.n];
	size_t n = (AGENT_KEYS_MAX - ag.keys.n) * sizeof ag.keys.slot[0];
	for (size_t i = 0; i < n; i++)
		if (p[i])
			abort(); /* a free slot still holds key material */
}

/* Every held key's blob parses back to its type and public part. */
static void check_blobs(void)
{
	for (unsigned i = 0; i < ag.keys.n; i++) {
		const struct agent_key *k = &ag.keys.slot[i];
		uint8_t b[AGENT_BLOB_MAX];
		struct wire_writer w;
		wire_writer_init(&w, b, sizeof b);
		wire_put_key_blob(&w, k->type, k->point);
		uint8_t pub[AGENT_PUB_MAX];
		if (w.bad || wire_key_blob_parse((struct wire_bytes){ b, w.len }, pub) != k->type ||
		    memcmp(pub, k->point, agent_pub_len(k->type)))
			abort();
	}
}

static bool inside(const uint8_t *msg, size_t len, struct wire_bytes b, size_t max)
{
	return b.len <= max && b.p >= msg && b.p + b.len <= msg + len;
}

/* What the parser hands out stays inside the message. */
static void check_parsed(const uint8_t *msg, size_t len, const struct agent_request *req)
{
	uint8_t pub[AGENT_PUB_MAX];
	struct wire_bytes blob = req->type == SSH_AGENTC_SIGN_REQUEST	 ? req->u.sign.key_blob
				 : req->type == SSH_AGENTC_REMOVE_IDENTITY ? req->u.remove.key_blob
									   : (struct wire_bytes){ NULL, 0 };
	wire_key_blob_parse(blob, pub);
	if (req->type != SSH_AGENTC_ADD_IDENTITY && req->type != SSH_AGENTC_ADD_ID_CONSTRAINED)
		return;
	enum agent_key_type t = req->u.add.key_type;
	if (t == AGENT_KEY_RSA) {
		const struct agent_rsa_fields *f = &req->u.add.rsa;
		if (!inside(msg, len, f->n, AGENT_RSA_N_MAX) || !inside(msg, len, f->e, AGENT_RSA_E_MAX) ||
		    !inside(msg, len, f->d, AGENT_RSA_N_MAX) ||
		    !inside(msg, len, f->iqmp, AGENT_RSA_FACTOR_MAX) ||
		    !inside(msg, len, f->p, AGENT_RSA_FACTOR_MAX) ||
		    !inside(msg, len, f->q, AGENT_RSA_FACTOR_MAX))
			abort();
		return;
	}
	if (!agent_pub_len(t) || !inside(msg, len, req->u.add.d, AGENT_P256_SCALAR) ||
	    !inside(msg, len, (struct wire_bytes){ req->u.add.point, agent_pub_len(t) }, AGENT_PUB_MAX))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	clock_ns = 1;
	agent_init(&ag, &env);
	while (size >= 4) {
		uint32_t len = agent_frame_len(data);
		if (!len || len > size - 4)
			break; /* the guest hangs up, or waits for more */
		const uint8_t *msg = data + 4;
		struct agent_request req;
		if (agent_parse_request(msg, len, &req) == AGENT_PARSE_OK) {
			check_parsed(msg, len, &req);
			if (req.type == SSH_AGENTC_EXTENSION) {
				struct agent_keygen kg;
				agent_parse_keygen(req.u.ext.contents, &kg);
			}
		}
		size_t n = agent_handle(&ag, msg, len, out);
		if (n < 1 || n > AGENT_REPLY_MAX || ag.keys.n > AGENT_KEYS_MAX)
			abort();
		check_wiped();
		check_blobs();
		if (ag.lock.locked) {
			uint8_t ids = SSH_AGENTC_REQUEST_IDENTITIES;
			if (agent_handle(&ag, &ids, 1, out) != 5 || out[0] != SSH_AGENT_IDENTITIES_ANSWER)
				abort(); /* locked: an empty list, nothing else */
		}
		clock_ns += 1000000000ull;
		data += 4 + len;
		size -= 4 + len;
	}
	return 0;
}

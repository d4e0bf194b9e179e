/* SPDX-License-Identifier: ISC */
/*
 * Unit tests of the ssh-agent guest's host-buildable modules
 * (services/ssh-agent): the wire format and parser, the key store, the
 * lock, P-256, Ed25519 and the request handler, with a fake clock and
 * entropy. Signatures are checked with BearSSL's and libsodium's
 * verifiers, which the agent itself never calls, and Ed25519 against
 * RFC 8032's test vector. Wiping is checked by searching the agent's whole state for
 * a key's scalar after each way a key can leave it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <bearssl.h>
#include <sodium/crypto_sign_ed25519.h>

#include "agent.h"
#include "agent_ed25519.h"
#include "agent_p256.h"
#include "agent_rsa.h"
#include "agent_vectors.h"

static uint64_t fake_now = 1000;
static unsigned seeds, delays;
static uint64_t delayed_ns;

static uint64_t now(void *ctx)
{
	return fake_now;
}

static bool seed(void *ctx, br_hmac_drbg_context *d)
{
	uint8_t s[32] = { 0 };
	s[0] = (uint8_t)++seeds;
	br_hmac_drbg_init(d, &br_sha256_vtable, s, sizeof s);
	return true;
}

static void delay(void *ctx, uint64_t ns)
{
	delays++;
	delayed_ns = ns;
}

static struct agent_env env = { now, seed, delay, NULL, false, true };
static struct agent ag;
static uint8_t out[AGENT_REPLY_MAX];

/* A fixed test key: the scalar and its public point, from BearSSL. */
static uint8_t key_d[32], key_q[65];

static int setup(void **state)
{
	fake_now = 1000;
	seeds = delays = 0;
	env.test_hooks = false;
	env.native_cpu = true;
	agent_init(&ag, &env);
	for (int i = 0; i < 32; i++)
		key_d[i] = (uint8_t)(0x41 + i); /* top bit clear: no sign byte */
	assert_true(p256_public(key_d, key_q));
	return 0;
}

static bool contains(const void *hay, size_t n, const void *needle, size_t m)
{
	for (size_t i = 0; i + m <= n; i++)
		if (!memcmp((const uint8_t *)hay + i, needle, m))
			return true;
	return false;
}

static bool agent_holds_scalar(const uint8_t d[32])
{
	return contains(&ag, sizeof ag, d, 32);
}

/* Message builders, with the module's own writer (tested below). */
static size_t add_msg(uint8_t *buf, size_t cap, uint8_t type, const uint8_t *d, size_t dlen,
		      const uint8_t *q, const char *comment, const uint8_t *cons, size_t clen)
{
	struct wire_writer w;
	wire_writer_init(&w, buf, cap);
	wire_put_u8(&w, type);
	wire_put_cstring(&w, AGENT_P256_NAME);
	wire_put_cstring(&w, AGENT_P256_CURVE);
	wire_put_string(&w, q, 65);
	wire_put_mpint(&w, d, dlen);
	wire_put_cstring(&w, comment);
	wire_put_raw(&w, cons, clen);
	assert_false(w.bad);
	return w.len;
}

static size_t blob_of(uint8_t *buf, const uint8_t *q)
{
	struct wire_writer w;
	wire_writer_init(&w, buf, AGENT_P256_BLOB);
	wire_put_p256_blob(&w, q);
	assert_false(w.bad);
	return w.len;
}

static size_t sign_msg(uint8_t *buf, size_t cap, const uint8_t *q, const char *data)
{
	uint8_t blob[AGENT_P256_BLOB];
	struct wire_writer w;
	wire_writer_init(&w, buf, cap);
	wire_put_u8(&w, SSH_AGENTC_SIGN_REQUEST);
	wire_put_string(&w, blob, blob_of(blob, q));
	wire_put_cstring(&w, data);
	wire_put_u32(&w, 0);
	return w.len;
}

static uint8_t call(const uint8_t *msg, size_t len, size_t *rlen)
{
	size_t n = agent_handle(&ag, msg, len, out);
	assert_true(n >= 1 && n <= AGENT_REPLY_MAX);
	if (rlen)
		*rlen = n;
	return out[0];
}

static uint8_t add_key(const char *comment, const uint8_t *cons, size_t clen)
{
	uint8_t m[2048];
	size_t n = add_msg(m, sizeof m, clen ? SSH_AGENTC_ADD_ID_CONSTRAINED : SSH_AGENTC_ADD_IDENTITY,
			   key_d, 32, key_q, comment, cons, clen);
	return call(m, n, NULL);
}

static unsigned listed(void)
{
	uint8_t m = SSH_AGENTC_REQUEST_IDENTITIES;
	size_t n;
	assert_int_equal(call(&m, 1, &n), SSH_AGENT_IDENTITIES_ANSWER);
	struct wire_reader r;
	wire_reader_init(&r, out + 1, n - 1);
	return wire_get_u32(&r);
}

/* Signs "data" with the test key through the agent; verifies with BearSSL. */
static uint8_t sign_and_verify(const char *data)
{
	uint8_t m[512];
	size_t n = sign_msg(m, sizeof m, key_q, data), rn;
	uint8_t t = call(m, n, &rn);
	if (t != SSH_AGENT_SIGN_RESPONSE)
		return t;
	/* byte 14, string(string name, string(mpint r, mpint s)) */
	struct wire_reader r, sig, rs;
	wire_reader_init(&r, out + 1, rn - 1);
	struct wire_bytes whole = wire_get_string(&r);
	assert_true(wire_done(&r));
	wire_reader_init(&sig, whole.p, whole.len);
	assert_true(wire_bytes_eq(wire_get_string(&sig), AGENT_P256_NAME));
	struct wire_bytes inner = wire_get_string(&sig);
	assert_true(wire_done(&sig));
	wire_reader_init(&rs, inner.p, inner.len);
	struct wire_bytes mr = wire_get_string(&rs), ms = wire_get_string(&rs);
	assert_true(wire_done(&rs));
	uint8_t raw[64] = { 0 };
	assert_true(mr.len >= 1 && mr.len <= 33 && ms.len >= 1 && ms.len <= 33);
	if (mr.len == 33) {
		assert_int_equal(mr.p[0], 0);
		mr.p++, mr.len--;
	}
	if (ms.len == 33) {
		assert_int_equal(ms.p[0], 0);
		ms.p++, ms.len--;
	}
	memcpy(raw + 32 - mr.len, mr.p, mr.len);
	memcpy(raw + 64 - ms.len, ms.p, ms.len);
	uint8_t h[32];
	br_sha256_context c;
	br_sha256_init(&c);
	br_sha256_update(&c, data, strlen(data));
	br_sha256_out(&c, h);
	br_ec_public_key pk = { BR_EC_secp256r1, key_q, 65 };
	assert_int_equal(br_ecdsa_i31_vrfy_raw(&br_ec_p256_m31, h, 32, &pk, raw, 64), 1);
	return t;
}

/* ---- wire format ---- */

static void test_reader_bounds(void **state)
{
	const uint8_t m[] = { 0, 0, 0, 10, 'a', 'b', 'c' }; /* says 10, has 3 */
	struct wire_reader r;
	wire_reader_init(&r, m, sizeof m);
	struct wire_bytes b = wire_get_string(&r);
	assert_null(b.p);
	assert_true(r.bad);
	assert_int_equal(wire_get_u8(&r), 0); /* stays failed */
	assert_false(wire_done(&r));
	const uint8_t huge[] = { 0xff, 0xff, 0xff, 0xff, 'x' };
	wire_reader_init(&r, huge, sizeof huge);
	wire_get_string(&r);
	assert_true(r.bad);
	wire_reader_init(&r, m, 3);
	wire_get_u32(&r);
	assert_true(r.bad);
}

static void test_writer_bounds_and_mpint(void **state)
{
	uint8_t buf[16];
	struct wire_writer w;
	wire_writer_init(&w, buf, 6);
	wire_put_cstring(&w, "abc");
	assert_true(w.bad);
	const uint8_t v1[] = { 0, 0, 0x7f, 1 }, v2[] = { 0x80, 1 }, zero[] = { 0, 0 };
	wire_writer_init(&w, buf, sizeof buf);
	wire_put_mpint(&w, v1, sizeof v1);
	assert_int_equal(w.len, 6);
	assert_memory_equal(buf, "\0\0\0\2\x7f\1", 6);
	wire_writer_init(&w, buf, sizeof buf);
	wire_put_mpint(&w, v2, sizeof v2);
	assert_memory_equal(buf, "\0\0\0\3\0\x80\1", 7);
	wire_writer_init(&w, buf, sizeof buf);
	wire_put_mpint(&w, zero, sizeof zero);
	assert_memory_equal(buf, "\0\0\0\0", 4);
	assert_int_equal(w.len, 4);
}

static void test_frame_len(void **state)
{
	const uint8_t z[4] = { 0 }, one[4] = { 0, 0, 0, 1 }, max[4] = { 0, 1, 0, 0 },
		      over[4] = { 0, 1, 0, 1 }, all[4] = { 0xff, 0xff, 0xff, 0xff };
	assert_int_equal(agent_frame_len(z), 0);
	assert_int_equal(agent_frame_len(one), 1);
	assert_int_equal(agent_frame_len(max), AGENT_MSG_MAX);
	assert_int_equal(agent_frame_len(over), 0);
	assert_int_equal(agent_frame_len(all), 0);
}

static void test_parse_add_and_constraints(void **state)
{
	uint8_t m[2048];
	struct agent_request req;
	const uint8_t life[] = { SSH_AGENT_CONSTRAIN_LIFETIME, 0, 0, 0, 5 };
	size_t n = add_msg(m, sizeof m, SSH_AGENTC_ADD_ID_CONSTRAINED, key_d, 32, key_q, "hi", life,
			   sizeof life);
	assert_int_equal(agent_parse_request(m, n, &req), AGENT_PARSE_OK);
	assert_int_equal(req.u.add.d.len, 32);
	assert_memory_equal(req.u.add.d.p, key_d, 32);
	assert_memory_equal(req.u.add.point, key_q, 65);
	assert_true(wire_bytes_eq(req.u.add.comment, "hi"));
	assert_true(req.u.add.c.has_lifetime);
	assert_int_equal(req.u.add.c.lifetime_s, 5);
	/* No proper prefix parses, but the one that ends where the
	 * constraints begin (an add with none): never an overread. */
	for (size_t k = 0; k < n; k++) {
		if (k == n - sizeof life) {
			assert_int_equal(agent_parse_request(m, k, &req), AGENT_PARSE_OK);
			assert_false(req.u.add.c.has_lifetime);
		} else {
			assert_int_not_equal(agent_parse_request(m, k, &req), AGENT_PARSE_OK);
		}
	}
	/* Trailing bytes after a plain add. */
	n = add_msg(m, sizeof m, SSH_AGENTC_ADD_IDENTITY, key_d, 32, key_q, "hi", life, 1);
	assert_int_equal(agent_parse_request(m, n, &req), AGENT_PARSE_MALFORMED);
	/* A constraint twice, an unknown one. */
	const uint8_t twice[] = { 2, 2 }, unknown[] = { 77 };
	n = add_msg(m, sizeof m, SSH_AGENTC_ADD_ID_CONSTRAINED, key_d, 32, key_q, "", twice, 2);
	assert_int_equal(agent_parse_request(m, n, &req), AGENT_PARSE_MALFORMED);
	n = add_msg(m, sizeof m, SSH_AGENTC_ADD_ID_CONSTRAINED, key_d, 32, key_q, "", unknown, 1);
	assert_int_equal(agent_parse_request(m, n, &req), AGENT_PARSE_UNSUPPORTED);
}

static void test_parse_other_messages(void **state)
{
	struct agent_request req;
	const uint8_t ids[] = { SSH_AGENTC_REQUEST_IDENTITIES }, ids_junk[] = { 11, 0 },
		      unknown[] = { 200 }, lock[] = { SSH_AGENTC_LOCK, 0, 0, 0, 2, 'p', 'w' },
		      ext[] = { SSH_AGENTC_EXTENSION, 0, 0, 0, 1, 'q', 9, 9 };
	assert_int_equal(agent_parse_request(ids, 1, &req), AGENT_PARSE_OK);
	assert_int_equal(agent_parse_request(ids, 0, &req), AGENT_PARSE_MALFORMED);
	assert_int_equal(agent_parse_request(NULL, 0, &req), AGENT_PARSE_MALFORMED);
	assert_int_equal(agent_parse_request(ids_junk, 2, &req), AGENT_PARSE_MALFORMED);
	assert_int_equal(agent_parse_request(unknown, 1, &req), AGENT_PARSE_UNSUPPORTED);
	assert_int_equal(agent_parse_request(lock, sizeof lock, &req), AGENT_PARSE_OK);
	assert_true(wire_bytes_eq(req.u.lock.pass, "pw"));
	assert_int_equal(agent_parse_request(ext, sizeof ext, &req), AGENT_PARSE_OK);
	assert_true(wire_bytes_eq(req.u.ext.name, "q"));
	assert_int_equal(req.u.ext.contents.len, 2);
	uint8_t m[512];
	size_t n = sign_msg(m, sizeof m, key_q, "data");
	assert_int_equal(agent_parse_request(m, n, &req), AGENT_PARSE_OK);
	assert_non_null(wire_p256_blob_point(req.u.sign.key_blob));
	assert_true(wire_bytes_eq(req.u.sign.data, "data"));
	assert_int_equal(agent_parse_request(m, n - 1, &req), AGENT_PARSE_MALFORMED);
}

static void test_parse_scalar_forms(void **state)
{
	uint8_t m[2048];
	struct agent_request req;
	const uint8_t hi[32] = { 0x80, 1 }, small[2] = { 0, 7 };
	/* A top-bit scalar has a sign byte; the parser strips it. */
	size_t n = add_msg(m, sizeof m, SSH_AGENTC_ADD_IDENTITY, hi, 32, key_q, "", NULL, 0);
	assert_int_equal(agent_parse_request(m, n, &req), AGENT_PARSE_OK);
	assert_int_equal(req.u.add.d.len, 32);
	assert_int_equal(req.u.add.d.p[0], 0x80);
	/* Short scalars are fine (left-padded by the agent). */
	n = add_msg(m, sizeof m, SSH_AGENTC_ADD_IDENTITY, small, 2, key_q, "", NULL, 0);
	assert_int_equal(agent_parse_request(m, n, &req), AGENT_PARSE_OK);
	assert_int_equal(req.u.add.d.len, 1);
	/* Zero (empty mpint) is refused by the parser. */
	n = add_msg(m, sizeof m, SSH_AGENTC_ADD_IDENTITY, small, 1, key_q, "", NULL, 0);
	assert_int_equal(agent_parse_request(m, n, &req), AGENT_PARSE_MALFORMED);
}

/* ---- P-256 ---- */

static void test_scalar_range(void **state)
{
	uint8_t d[32];
	memset(d, 0, 32);
	assert_false(p256_scalar_ok(d));
	d[31] = 1;
	assert_true(p256_scalar_ok(d));
	static const uint8_t n[32] = {
		0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17, 0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51,
	};
	memcpy(d, n, 32);
	assert_false(p256_scalar_ok(d));
	d[31] = 0x50; /* n - 1 */
	assert_true(p256_scalar_ok(d));
	d[31] = 0x52; /* n + 1 */
	assert_false(p256_scalar_ok(d));
	memset(d, 0xff, 32);
	assert_false(p256_scalar_ok(d));
	assert_false(p256_public(d, key_q));
}

/* ---- key store ---- */

static void test_keys_order_replace_full(void **state)
{
	struct agent_keys k;
	keys_init(&k);
	uint8_t d[AGENT_SECRET_MAX] = { 1 }, q[AGENT_PUB_MAX] = { 4 };
	for (unsigned i = 0; i < AGENT_KEYS_MAX; i++) {
		q[1] = (uint8_t)i;
		assert_int_equal(keys_add(&k, AGENT_KEY_P256, d, q, "c", 1, false, 0), 0);
	}
	q[1] = 0xee;
	assert_int_equal(keys_add(&k, AGENT_KEY_P256, d, q, "c", 1, false, 0), -1); /* full */
	q[1] = 3;
	assert_int_equal(keys_add(&k, AGENT_KEY_P256, d, q, "new", 3, true, 7), 0); /* replaces */
	assert_int_equal(k.n, AGENT_KEYS_MAX);
	assert_int_equal(k.slot[3].comment_len, 3);
	assert_true(keys_remove(&k, AGENT_KEY_P256, q));
	assert_false(keys_remove(&k, AGENT_KEY_P256, q));
	assert_int_equal(k.n, AGENT_KEYS_MAX - 1);
	assert_int_equal(k.slot[3].point[1], 4); /* later keys moved down, in order */
	uint8_t zero[sizeof k.slot[0]];
	memset(zero, 0, sizeof zero);
	assert_memory_equal(&k.slot[AGENT_KEYS_MAX - 1], zero, sizeof zero);
	assert_int_equal(keys_add(&k, AGENT_KEY_P256, d, q, "c", AGENT_COMMENT_MAX + 1, false, 0), -1);
}

static void test_keys_reap(void **state)
{
	struct agent_keys k;
	keys_init(&k);
	uint8_t d[AGENT_SECRET_MAX] = { 9 }, q[AGENT_PUB_MAX] = { 4, 1 };
	keys_add(&k, AGENT_KEY_P256, d, q, "", 0, true, 50);
	q[1] = 2;
	keys_add(&k, AGENT_KEY_P256, d, q, "", 0, false, 0);
	q[1] = 3;
	keys_add(&k, AGENT_KEY_P256, d, q, "", 0, true, 20);
	assert_int_equal(keys_next_expiry(&k), 20);
	assert_int_equal(keys_reap(&k, 19), 0);
	assert_int_equal(keys_reap(&k, 20), 1);
	assert_int_equal(keys_next_expiry(&k), 50);
	assert_int_equal(keys_reap(&k, 1000), 1);
	assert_int_equal(k.n, 1);
	assert_int_equal(keys_next_expiry(&k), UINT64_MAX);
	assert_false(contains(&k.slot[1], sizeof k.slot - sizeof k.slot[0], d, 1));
}

/* ---- the agent ---- */

static void test_add_list_sign_remove(void **state)
{
	assert_int_equal(listed(), 0);
	assert_int_equal(add_key("mine", NULL, 0), SSH_AGENT_SUCCESS);
	assert_true(agent_holds_scalar(key_d)); /* the control for the wipe checks */
	assert_int_equal(listed(), 1);
	assert_int_equal(add_key("again", NULL, 0), SSH_AGENT_SUCCESS); /* replaces */
	assert_int_equal(listed(), 1);
	assert_int_equal(sign_and_verify("to be signed"), SSH_AGENT_SIGN_RESPONSE);
	assert_int_equal(ag.signatures, 1);
	uint8_t m[256];
	m[0] = SSH_AGENTC_REMOVE_IDENTITY;
	struct wire_writer w;
	wire_writer_init(&w, m + 1, sizeof m - 1);
	uint8_t blob[AGENT_P256_BLOB];
	wire_put_string(&w, blob, blob_of(blob, key_q));
	assert_int_equal(call(m, 1 + w.len, NULL), SSH_AGENT_SUCCESS);
	assert_false(agent_holds_scalar(key_d));
	assert_int_equal(call(m, 1 + w.len, NULL), SSH_AGENT_FAILURE);
	assert_int_equal(sign_and_verify("x"), SSH_AGENT_FAILURE);
	assert_int_equal(add_key("mine", NULL, 0), SSH_AGENT_SUCCESS);
	uint8_t all = SSH_AGENTC_REMOVE_ALL_IDENTITIES;
	assert_int_equal(call(&all, 1, NULL), SSH_AGENT_SUCCESS);
	assert_int_equal(listed(), 0);
	assert_false(agent_holds_scalar(key_d));
}

static void test_add_refusals(void **state)
{
	uint8_t m[2048], other[65];
	uint8_t d2[32];
	memcpy(d2, key_d, 32);
	d2[31] ^= 1;
	assert_true(p256_public(d2, other));
	/* A scalar that does not belong to the point. */
	size_t n = add_msg(m, sizeof m, SSH_AGENTC_ADD_IDENTITY, d2, 32, key_q, "", NULL, 0);
	assert_int_equal(call(m, n, NULL), SSH_AGENT_FAILURE);
	const uint8_t confirm[] = { SSH_AGENT_CONSTRAIN_CONFIRM };
	assert_int_equal(add_key("c", confirm, 1), SSH_AGENT_FAILURE);
	assert_int_equal(listed(), 0);
	assert_false(agent_holds_scalar(d2));
	assert_false(agent_holds_scalar(key_d));
}

static void test_lock(void **state)
{
	assert_int_equal(add_key("k", NULL, 0), SSH_AGENT_SUCCESS);
	const uint8_t lock[] = { SSH_AGENTC_LOCK, 0, 0, 0, 6, 's', 'e', 'c', 'r', 'e', 't' };
	uint8_t unlock[sizeof lock];
	memcpy(unlock, lock, sizeof lock);
	unlock[0] = SSH_AGENTC_UNLOCK;
	assert_int_equal(call(lock, sizeof lock, NULL), SSH_AGENT_SUCCESS);
	assert_false(contains(&ag, sizeof ag, "secret", 6)); /* only a salted hash */
	assert_int_equal(call(lock, sizeof lock, NULL), SSH_AGENT_FAILURE); /* already */
	assert_int_equal(listed(), 0);
	assert_int_equal(sign_and_verify("locked"), SSH_AGENT_FAILURE);
	assert_int_equal(add_key("k2", NULL, 0), SSH_AGENT_FAILURE);
	uint8_t all = SSH_AGENTC_REMOVE_ALL_IDENTITIES;
	assert_int_equal(call(&all, 1, NULL), SSH_AGENT_FAILURE);
	const uint8_t query[] = { SSH_AGENTC_EXTENSION, 0, 0, 0, 5, 'q', 'u', 'e', 'r', 'y' };
	assert_int_equal(call(query, sizeof query, NULL), SSH_AGENT_FAILURE);
	uint8_t wrong[sizeof lock];
	memcpy(wrong, unlock, sizeof lock);
	wrong[sizeof wrong - 1] = 'X';
	assert_int_equal(call(wrong, sizeof wrong, NULL), SSH_AGENT_FAILURE);
	assert_int_equal(delays, 1);
	assert_int_equal(call(wrong, sizeof wrong, NULL), SSH_AGENT_FAILURE);
	assert_int_equal(delays, 2);
	assert_true(delayed_ns > 100000000ull); /* grows with each failure */
	assert_int_equal(call(unlock, sizeof unlock, NULL), SSH_AGENT_SUCCESS);
	assert_int_equal(listed(), 1);
	assert_int_equal(sign_and_verify("unlocked"), SSH_AGENT_SIGN_RESPONSE);
	assert_int_equal(call(unlock, sizeof unlock, NULL), SSH_AGENT_FAILURE); /* not locked */
	assert_int_equal(delays, 2);
	/* Two locks with one passphrase: different salts, different hashes. */
	struct agent_lock a, b;
	uint8_t s1[AGENT_LOCK_SALT] = { 1 }, s2[AGENT_LOCK_SALT] = { 2 };
	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	assert_true(lock_engage(&a, s1, "pw", 2));
	assert_true(lock_engage(&b, s2, "pw", 2));
	assert_memory_not_equal(a.hash, b.hash, AGENT_LOCK_HASH);
	assert_false(lock_release(&a, "pW", 2));
	assert_false(lock_release(&a, "pw", 1));
	assert_true(lock_release(&a, "pw", 2));
	assert_false(a.locked);
}

static void test_lifetime(void **state)
{
	const uint8_t life[] = { SSH_AGENT_CONSTRAIN_LIFETIME, 0, 0, 0, 3 };
	fake_now = 5 * 1000000000ull;
	assert_int_equal(add_key("short", life, sizeof life), SSH_AGENT_SUCCESS);
	assert_int_equal(agent_reap(&ag), fake_now + 3 * 1000000000ull);
	fake_now += 2999999999ull;
	assert_int_equal(listed(), 1);
	assert_int_equal(sign_and_verify("in time"), SSH_AGENT_SIGN_RESPONSE);
	fake_now += 1;
	assert_int_equal(sign_and_verify("too late"), SSH_AGENT_FAILURE);
	assert_int_equal(listed(), 0);
	assert_false(agent_holds_scalar(key_d));
	/* Lifetime 2^32-1 s does not wrap the clock. */
	const uint8_t forever[] = { SSH_AGENT_CONSTRAIN_LIFETIME, 0xff, 0xff, 0xff, 0xff };
	fake_now = UINT64_MAX - 10;
	assert_int_equal(add_key("long", forever, sizeof forever), SSH_AGENT_SUCCESS);
	assert_int_equal(listed(), 1);
}

/* A keygen@cloak request for a key of type name in m (at least 256
 * bytes); returns its length. */
static size_t keygen_msg(uint8_t *m, const char *name, const char *comment)
{
	struct wire_writer w;
	wire_writer_init(&w, m, 256);
	wire_put_u8(&w, SSH_AGENTC_EXTENSION);
	wire_put_cstring(&w, AGENT_EXT_KEYGEN);
	wire_put_cstring(&w, name);
	wire_put_cstring(&w, comment);
	assert_false(w.bad);
	return w.len;
}

/* Generates a key of type name; returns the public key blob of the reply
 * (pointing into out). */
static struct wire_bytes keygen_ok(const char *name, const char *comment)
{
	uint8_t m[256];
	size_t n;
	assert_int_equal(call(m, keygen_msg(m, name, comment), &n), SSH_AGENT_EXTENSION_RESPONSE);
	struct wire_reader r;
	wire_reader_init(&r, out + 1, n - 1);
	assert_true(wire_bytes_eq(wire_get_string(&r), AGENT_EXT_KEYGEN));
	struct wire_bytes blob = wire_get_string(&r);
	assert_true(wire_done(&r));
	return blob;
}

static void test_keygen_query_keyhash(void **state)
{
	struct wire_writer w;
	size_t n;
	struct wire_bytes blob = keygen_ok(AGENT_P256_NAME, "made inside");
	assert_non_null(wire_p256_blob_point(blob));
	uint8_t q[65];
	memcpy(q, wire_p256_blob_point(blob), 65);
	assert_int_equal(seeds, 1);
	assert_int_equal(listed(), 1);
	assert_memory_equal(ag.keys.slot[0].point, q, 65);
	/* keyhash answers only with test hooks. */
	uint8_t kh[256];
	wire_writer_init(&w, kh, sizeof kh);
	wire_put_u8(&w, SSH_AGENTC_EXTENSION);
	wire_put_cstring(&w, AGENT_EXT_KEYHASH);
	uint8_t b[AGENT_P256_BLOB];
	wire_put_string(&w, b, blob_of(b, ag.keys.slot[0].point));
	assert_int_equal(call(kh, w.len, NULL), SSH_AGENT_FAILURE);
	env.test_hooks = true;
	assert_int_equal(call(kh, w.len, &n), SSH_AGENT_EXTENSION_RESPONSE);
	uint8_t h[32];
	br_sha256_context c;
	br_sha256_init(&c);
	br_sha256_update(&c, ag.keys.slot[0].d, 32);
	br_sha256_out(&c, h);
	assert_memory_equal(out + n - 32, h, 32);
	const uint8_t query[] = { SSH_AGENTC_EXTENSION, 0, 0, 0, 5, 'q', 'u', 'e', 'r', 'y' };
	assert_int_equal(call(query, sizeof query, &n), SSH_AGENT_EXTENSION_RESPONSE);
	assert_true(contains(out, n, AGENT_EXT_KEYGEN, strlen(AGENT_EXT_KEYGEN)));
}

/* ---- Ed25519 ---- */

/* RFC 8032's key and signature: rfc_seed, rfc_pub, rfc_sig (agent_vectors.h). */

/* An Ed25519 add as OpenSSH sends it: name, A, seed || sk_pub, comment. */
static size_t ed_add_msg(uint8_t *buf, size_t cap, const uint8_t *seed, const uint8_t *pub,
			 const uint8_t *sk_pub, size_t sk_len)
{
	uint8_t sk[64];
	memcpy(sk, seed, 32);
	memcpy(sk + 32, sk_pub, 32);
	struct wire_writer w;
	wire_writer_init(&w, buf, cap);
	wire_put_u8(&w, SSH_AGENTC_ADD_IDENTITY);
	wire_put_cstring(&w, AGENT_ED25519_NAME);
	wire_put_string(&w, pub, 32);
	wire_put_string(&w, sk, sk_len);
	wire_put_cstring(&w, "ed key");
	assert_false(w.bad);
	return w.len;
}

/* Signs data with the key of blob and these flags; on success the
 * algorithm name and signature are returned, pointing into out. */
static uint8_t sign_req(const uint8_t *blob, size_t blen, const void *data, size_t dlen,
			    uint32_t flags, struct wire_bytes *alg, struct wire_bytes *sig)
{
	uint8_t m[1024];
	struct wire_writer w;
	wire_writer_init(&w, m, sizeof m);
	wire_put_u8(&w, SSH_AGENTC_SIGN_REQUEST);
	wire_put_string(&w, blob, blen);
	wire_put_string(&w, data, dlen);
	wire_put_u32(&w, flags);
	assert_false(w.bad);
	size_t n;
	uint8_t t = call(m, w.len, &n);
	if (t != SSH_AGENT_SIGN_RESPONSE)
		return t;
	struct wire_reader r, in;
	wire_reader_init(&r, out + 1, n - 1);
	struct wire_bytes whole = wire_get_string(&r);
	assert_true(wire_done(&r));
	wire_reader_init(&in, whole.p, whole.len);
	*alg = wire_get_string(&in);
	*sig = wire_get_string(&in);
	assert_true(wire_done(&in));
	return t;
}

/* Signs data through the agent with the Ed25519 key pub; the raw
 * signature, or the reply type if it is no signature. */
static uint8_t ed_sign(const uint8_t *pub, const void *data, size_t len, uint8_t sig[64])
{
	uint8_t blob[AGENT_BLOB_MAX];
	struct wire_writer w;
	wire_writer_init(&w, blob, sizeof blob);
	wire_put_key_blob(&w, AGENT_KEY_ED25519, pub);
	struct wire_bytes alg, raw;
	/* SSH_AGENT_RSA_SHA2_512: ignored */
	uint8_t t = sign_req(blob, w.len, data, len, SSH_AGENT_RSA_SHA2_512, &alg, &raw);
	if (t != SSH_AGENT_SIGN_RESPONSE)
		return t;
	assert_true(wire_bytes_eq(alg, AGENT_ED25519_NAME));
	assert_int_equal(raw.len, 64);
	memcpy(sig, raw.p, 64);
	return t;
}

static void test_ed25519_rfc8032(void **state)
{
	uint8_t pub[32], sig[64];
	assert_true(ed25519_public(rfc_seed, pub));
	assert_memory_equal(pub, rfc_pub, 32);
	assert_true(ed25519_sign(rfc_seed, rfc_pub, "", 0, sig));
	assert_memory_equal(sig, rfc_sig, 64);
}

static void test_ed25519_add_list_sign_remove(void **state)
{
	uint8_t m[512], sig[64];
	size_t n = ed_add_msg(m, sizeof m, rfc_seed, rfc_pub, rfc_pub, 64);
	struct agent_request req;
	assert_int_equal(agent_parse_request(m, n, &req), AGENT_PARSE_OK);
	assert_int_equal(req.u.add.key_type, AGENT_KEY_ED25519);
	assert_memory_equal(req.u.add.d.p, rfc_seed, 32);
	assert_int_equal(req.u.add.d.len, 32);
	assert_memory_equal(req.u.add.point, rfc_pub, 32);
	for (size_t k = 0; k < n; k++)
		assert_int_not_equal(agent_parse_request(m, k, &req), AGENT_PARSE_OK);
	assert_int_equal(call(m, n, NULL), SSH_AGENT_SUCCESS);
	assert_true(agent_holds_scalar(rfc_seed));
	assert_int_equal(add_key("p256 too", NULL, 0), SSH_AGENT_SUCCESS);
	assert_int_equal(listed(), 2);
	/* The list carries the key's OpenSSH blob. */
	uint8_t blob[AGENT_BLOB_MAX];
	struct wire_writer w;
	wire_writer_init(&w, blob, sizeof blob);
	wire_put_key_blob(&w, AGENT_KEY_ED25519, rfc_pub);
	assert_int_equal(w.len, AGENT_ED25519_BLOB);
	size_t ln;
	uint8_t ids = SSH_AGENTC_REQUEST_IDENTITIES;
	call(&ids, 1, &ln);
	assert_true(contains(out, ln, blob, w.len));
	uint8_t pub[AGENT_PUB_MAX];
	assert_int_equal(wire_key_blob_parse((struct wire_bytes){ blob, w.len }, pub),
			 AGENT_KEY_ED25519);
	assert_memory_equal(pub, rfc_pub, 32);
	assert_int_equal(wire_key_blob_parse((struct wire_bytes){ blob, w.len - 1 }, pub),
			 AGENT_KEY_NONE);
	assert_int_equal(ed_sign(rfc_pub, "", 0, sig), SSH_AGENT_SIGN_RESPONSE);
	assert_memory_equal(sig, rfc_sig, 64);
	assert_int_equal(ed_sign(rfc_pub, "a login", 7, sig), SSH_AGENT_SIGN_RESPONSE);
	assert_int_equal(crypto_sign_ed25519_verify_detached(sig, (const uint8_t *)"a login", 7,
							     rfc_pub), 0);
	assert_int_equal(sign_and_verify("the P-256 key still signs"), SSH_AGENT_SIGN_RESPONSE);
	/* Remove: its seed is gone, the other key stays. */
	uint8_t rm[128];
	wire_writer_init(&w, rm, sizeof rm);
	wire_put_u8(&w, SSH_AGENTC_REMOVE_IDENTITY);
	wire_put_string(&w, blob, AGENT_ED25519_BLOB);
	assert_int_equal(call(rm, w.len, NULL), SSH_AGENT_SUCCESS);
	assert_false(agent_holds_scalar(rfc_seed));
	assert_int_equal(listed(), 1);
	assert_int_equal(ed_sign(rfc_pub, "", 0, sig), SSH_AGENT_FAILURE);
}

static void test_ed25519_add_refusals(void **state)
{
	uint8_t m[512], other[32];
	struct agent_request req;
	memcpy(other, rfc_pub, 32);
	other[0] ^= 1;
	/* The private key's copy of A differs from the given A. */
	size_t n = ed_add_msg(m, sizeof m, rfc_seed, rfc_pub, other, 64);
	assert_int_equal(agent_parse_request(m, n, &req), AGENT_PARSE_MALFORMED);
	assert_int_equal(call(m, n, NULL), SSH_AGENT_FAILURE);
	/* A consistent message whose A is not its seed's public key. */
	n = ed_add_msg(m, sizeof m, rfc_seed, other, other, 64);
	assert_int_equal(agent_parse_request(m, n, &req), AGENT_PARSE_OK);
	assert_int_equal(call(m, n, NULL), SSH_AGENT_FAILURE);
	/* A private key of the wrong length. */
	n = ed_add_msg(m, sizeof m, rfc_seed, rfc_pub, rfc_pub, 63);
	assert_int_equal(agent_parse_request(m, n, &req), AGENT_PARSE_MALFORMED);
	assert_int_equal(listed(), 0);
	assert_false(agent_holds_scalar(rfc_seed));
	/* Where Ed25519 cannot run (an emulating KVM), a good add and a
	 * keygen are refused, and nothing of its seed is kept. */
	env.native_cpu = false;
	n = ed_add_msg(m, sizeof m, rfc_seed, rfc_pub, rfc_pub, 64);
	assert_int_equal(call(m, n, NULL), SSH_AGENT_FAILURE);
	struct wire_writer w;
	wire_writer_init(&w, m, sizeof m);
	wire_put_u8(&w, SSH_AGENTC_EXTENSION);
	wire_put_cstring(&w, AGENT_EXT_KEYGEN);
	wire_put_cstring(&w, AGENT_ED25519_NAME);
	wire_put_cstring(&w, "c");
	assert_int_equal(call(m, w.len, NULL), SSH_AGENT_EXTENSION_FAILURE);
	assert_int_equal(listed(), 0);
	assert_false(agent_holds_scalar(rfc_seed));
	env.native_cpu = true;
	n = ed_add_msg(m, sizeof m, rfc_seed, rfc_pub, rfc_pub, 64);
	assert_int_equal(call(m, n, NULL), SSH_AGENT_SUCCESS); /* the control */
}

static void test_ed25519_keygen(void **state)
{
	struct wire_bytes blob = keygen_ok(AGENT_ED25519_NAME, "made inside");
	uint8_t pub[AGENT_PUB_MAX];
	assert_int_equal(wire_key_blob_parse(blob, pub), AGENT_KEY_ED25519);
	uint8_t a[32], sig[64];
	memcpy(a, pub, 32);
	assert_int_equal(listed(), 1);
	assert_int_equal(ag.keys.slot[0].type, AGENT_KEY_ED25519);
	/* The held seed is the key that was listed. */
	uint8_t again[32];
	assert_true(ed25519_public(ag.keys.slot[0].d, again));
	assert_memory_equal(again, a, 32);
	assert_int_equal(ed_sign(a, "msg", 3, sig), SSH_AGENT_SIGN_RESPONSE);
	assert_int_equal(crypto_sign_ed25519_verify_detached(sig, (const uint8_t *)"msg", 3, a), 0);
	sig[0] ^= 1;
	assert_int_not_equal(crypto_sign_ed25519_verify_detached(sig, (const uint8_t *)"msg", 3, a), 0);
	/* An unknown type is refused. */
	uint8_t m[256];
	assert_int_equal(call(m, keygen_msg(m, "ssh-dss", "c"), NULL), SSH_AGENT_EXTENSION_FAILURE);
	assert_int_equal(listed(), 1);
}

/* ---- RSA ---- */

#define WB(a) ((struct wire_bytes){ a, sizeof a })

/* The test key's fields as OpenSSH sends them (agent_vectors.h). */
static struct agent_rsa_fields rsa_fields(void)
{
	return (struct agent_rsa_fields){ WB(rsa_n), WB(rsa_e), WB(rsa_d),
					  WB(rsa_iqmp), WB(rsa_p), WB(rsa_q) };
}

static size_t rsa_add_msg(uint8_t *buf, size_t cap, const struct agent_rsa_fields *f)
{
	struct wire_writer w;
	wire_writer_init(&w, buf, cap);
	wire_put_u8(&w, SSH_AGENTC_ADD_IDENTITY);
	wire_put_cstring(&w, AGENT_RSA_NAME);
	const struct wire_bytes *v[] = { &f->n, &f->e, &f->d, &f->iqmp, &f->p, &f->q };
	for (size_t i = 0; i < 6; i++)
		wire_put_mpint(&w, v[i]->p, v[i]->len);
	wire_put_cstring(&w, "rsa key");
	assert_false(w.bad);
	return w.len;
}

/* The test key's public blob, as OpenSSH writes it: ssh-rsa, e, n. */
static size_t rsa_blob(uint8_t *buf)
{
	struct wire_writer w;
	wire_writer_init(&w, buf, AGENT_BLOB_MAX);
	wire_put_cstring(&w, AGENT_RSA_NAME);
	wire_put_mpint(&w, rsa_e, sizeof rsa_e);
	wire_put_mpint(&w, rsa_n, sizeof rsa_n);
	assert_false(w.bad);
	return w.len;
}

static void test_rsa_known_answer(void **state)
{
	uint8_t m[2048], blob[AGENT_BLOB_MAX];
	struct agent_rsa_fields f = rsa_fields();
	size_t n = rsa_add_msg(m, sizeof m, &f);
	struct agent_request req;
	assert_int_equal(agent_parse_request(m, n, &req), AGENT_PARSE_OK);
	assert_int_equal(req.u.add.key_type, AGENT_KEY_RSA);
	assert_memory_equal(req.u.add.rsa.p.p, rsa_p, sizeof rsa_p);
	for (size_t k = 0; k < n; k++)
		assert_int_not_equal(agent_parse_request(m, k, &req), AGENT_PARSE_OK);
	assert_int_equal(call(m, n, NULL), SSH_AGENT_SUCCESS);
	assert_true(contains(&ag, sizeof ag, rsa_p, sizeof rsa_p));
	assert_int_equal(listed(), 1);
	size_t blen = rsa_blob(blob), ln;
	uint8_t ids = SSH_AGENTC_REQUEST_IDENTITIES;
	call(&ids, 1, &ln);
	assert_true(contains(out, ln, blob, blen));
	/* OpenSSL's signatures of the same message with the same key
	 * (PKCS#1 v1.5 is deterministic). */
	struct wire_bytes alg, sig;
	assert_int_equal(sign_req(blob, blen, rsa_msg, sizeof rsa_msg - 1,
				      SSH_AGENT_RSA_SHA2_256, &alg, &sig), SSH_AGENT_SIGN_RESPONSE);
	assert_true(wire_bytes_eq(alg, AGENT_RSA_SHA256_NAME));
	assert_int_equal(sig.len, sizeof rsa_sig256);
	assert_memory_equal(sig.p, rsa_sig256, sizeof rsa_sig256);
	assert_int_equal(sign_req(blob, blen, rsa_msg, sizeof rsa_msg - 1,
				      SSH_AGENT_RSA_SHA2_512, &alg, &sig), SSH_AGENT_SIGN_RESPONSE);
	assert_true(wire_bytes_eq(alg, AGENT_RSA_SHA512_NAME));
	assert_int_equal(sig.len, sizeof rsa_sig512);
	assert_memory_equal(sig.p, rsa_sig512, sizeof rsa_sig512);
	/* Both flags: SHA-256, as OpenSSH's agent picks. */
	assert_int_equal(sign_req(blob, blen, rsa_msg, sizeof rsa_msg - 1,
				      SSH_AGENT_RSA_SHA2_256 | SSH_AGENT_RSA_SHA2_512, &alg, &sig),
			 SSH_AGENT_SIGN_RESPONSE);
	assert_true(wire_bytes_eq(alg, AGENT_RSA_SHA256_NAME));
	/* No SHA-2 flag: ssh-rsa with SHA-1, refused. */
	assert_int_equal(sign_req(blob, blen, rsa_msg, sizeof rsa_msg - 1, 0, &alg, &sig),
			 SSH_AGENT_FAILURE);
	/* Remove: p is gone from the agent. */
	struct wire_writer w;
	wire_writer_init(&w, m, sizeof m);
	wire_put_u8(&w, SSH_AGENTC_REMOVE_IDENTITY);
	wire_put_string(&w, blob, blen);
	assert_int_equal(call(m, w.len, NULL), SSH_AGENT_SUCCESS);
	assert_int_equal(listed(), 0);
	assert_false(contains(&ag, sizeof ag, rsa_p, sizeof rsa_p));
	assert_false(contains(&ag, sizeof ag, rsa_q, sizeof rsa_q));
	assert_int_equal(sign_req(blob, blen, "x", 1, SSH_AGENT_RSA_SHA2_256, &alg, &sig),
			 SSH_AGENT_FAILURE);
}

/* An add of f: the parser's verdict, then the agent's reply. */
static void rsa_add_expect(const struct agent_rsa_fields *f, enum agent_parse parse,
			   uint8_t reply)
{
	uint8_t m[2048];
	struct agent_request req;
	size_t n = rsa_add_msg(m, sizeof m, f);
	assert_int_equal(agent_parse_request(m, n, &req), parse);
	assert_int_equal(call(m, n, NULL), reply);
}

/* The len bytes at v with the bits flip of the last one flipped, in buf. */
static struct wire_bytes flipped(uint8_t *buf, const uint8_t *v, size_t len, uint8_t flip)
{
	memcpy(buf, v, len);
	buf[len - 1] ^= flip;
	return (struct wire_bytes){ buf, len };
}

static void test_rsa_add_refusals(void **state)
{
	uint8_t bad[sizeof rsa_n], one[1] = { 1 }, even[] = { 0x01, 0x00, 0x00 };
	struct agent_rsa_fields f = rsa_fields();
	/* Fields that parse but make no key: each is caught by the key
	 * check (sign, then verify with n and e). */
	f.iqmp = flipped(bad, rsa_iqmp, sizeof rsa_iqmp, 2);
	rsa_add_expect(&f, AGENT_PARSE_OK, SSH_AGENT_FAILURE);
	f = rsa_fields();
	f.p = WB(rsa_q), f.q = WB(rsa_p); /* iqmp is then for the wrong prime */
	rsa_add_expect(&f, AGENT_PARSE_OK, SSH_AGENT_FAILURE);
	f = rsa_fields();
	f.d = flipped(bad, rsa_d, sizeof rsa_d, 2);
	rsa_add_expect(&f, AGENT_PARSE_OK, SSH_AGENT_FAILURE);
	f = rsa_fields();
	f.n = flipped(bad, rsa_n, sizeof rsa_n, 2); /* still odd */
	rsa_add_expect(&f, AGENT_PARSE_OK, SSH_AGENT_FAILURE);
	f = rsa_fields();
	f.p = WB(one); /* p - 1 = 0 */
	rsa_add_expect(&f, AGENT_PARSE_OK, SSH_AGENT_FAILURE);
	/* Fields the parser refuses: an even e, e = 1, an even n, a
	 * 2040-bit n, a factor longer than half the largest n. */
	f = rsa_fields();
	f.e = WB(even);
	rsa_add_expect(&f, AGENT_PARSE_MALFORMED, SSH_AGENT_FAILURE);
	f.e = WB(one);
	rsa_add_expect(&f, AGENT_PARSE_MALFORMED, SSH_AGENT_FAILURE);
	f = rsa_fields();
	f.n = flipped(bad, rsa_n, sizeof rsa_n, 1);
	rsa_add_expect(&f, AGENT_PARSE_MALFORMED, SSH_AGENT_FAILURE);
	f.n = (struct wire_bytes){ rsa_n + 1, sizeof rsa_n - 1 };
	rsa_add_expect(&f, AGENT_PARSE_MALFORMED, SSH_AGENT_FAILURE);
	uint8_t big[AGENT_RSA_FACTOR_MAX + 1];
	memset(big, 0x11, sizeof big);
	f = rsa_fields();
	f.p = WB(big);
	rsa_add_expect(&f, AGENT_PARSE_MALFORMED, SSH_AGENT_FAILURE);
	assert_int_equal(listed(), 0);
	assert_false(contains(&ag, sizeof ag, rsa_p, sizeof rsa_p));
	/* Where KVM emulates guest code, a good key is refused too. */
	f = rsa_fields();
	env.native_cpu = false;
	rsa_add_expect(&f, AGENT_PARSE_OK, SSH_AGENT_FAILURE);
	assert_false(contains(&ag, sizeof ag, rsa_p, sizeof rsa_p));
	env.native_cpu = true;
	rsa_add_expect(&f, AGENT_PARSE_OK, SSH_AGENT_SUCCESS); /* the control */
	assert_int_equal(listed(), 1);
}

/* The key check on its own: dp and dq computed from d match the CRT
 * exponents OpenSSL keeps (d mod (p-1), d mod (q-1)). */
static void test_rsa_import_crt(void **state)
{
	struct agent_rsa_fields f = rsa_fields();
	uint8_t secret[AGENT_RSA_SECRET], pub[AGENT_RSA_PUB];
	assert_true(rsa_import(&f, secret, pub));
	const uint8_t *p = secret + AGENT_RSA_FACTOR_MAX - sizeof rsa_p;
	assert_memory_equal(p, rsa_p, sizeof rsa_p);
	assert_memory_equal(pub + AGENT_RSA_PUB - sizeof rsa_n, rsa_n, sizeof rsa_n);
	/* dp * e = 1 mod (p - 1) would need bignums; instead the signature
	 * made from dp and dq is OpenSSL's (test_rsa_known_answer), and a
	 * one-bit change of d changes dp and is refused. */
	uint8_t d2[sizeof rsa_d];
	memcpy(d2, rsa_d, sizeof d2);
	d2[0] ^= 0x01;
	f.d = WB(d2);
	uint8_t secret2[AGENT_RSA_SECRET];
	assert_false(rsa_import(&f, secret2, pub));
	uint8_t zero[AGENT_RSA_SECRET];
	memset(zero, 0, sizeof zero);
	assert_memory_equal(secret2, zero, sizeof zero); /* nothing left of a refused key */
}

static void test_rsa_keygen(void **state)
{
	struct wire_bytes blob = keygen_ok(AGENT_RSA_NAME, "rsa made inside");
	struct wire_writer w;
	size_t n;
	uint8_t pub[AGENT_PUB_MAX], b[AGENT_BLOB_MAX];
	assert_int_equal(wire_key_blob_parse(blob, pub), AGENT_KEY_RSA);
	memcpy(b, blob.p, blob.len);
	size_t blen = blob.len;
	/* e = 65537, n of AGENT_RSA_KEYGEN_BITS bits. */
	const uint8_t e[] = { 0, 1, 0, 1 };
	assert_memory_equal(pub, e, 4);
	const uint8_t *nn = pub + AGENT_RSA_PUB - AGENT_RSA_KEYGEN_BITS / 8;
	assert_true(nn[0] & 0x80);
	assert_int_equal(nn[-1], 0);
	struct wire_bytes alg, sig;
	assert_int_equal(sign_req(b, blen, "msg", 3, SSH_AGENT_RSA_SHA2_512, &alg, &sig),
			 SSH_AGENT_SIGN_RESPONSE);
	assert_true(wire_bytes_eq(alg, AGENT_RSA_SHA512_NAME));
	/* BearSSL's verifier takes it; a changed message does not. */
	br_rsa_public_key pk = { (unsigned char *)nn, AGENT_RSA_KEYGEN_BITS / 8,
				 (unsigned char *)pub + 1, 3 };
	uint8_t h[64], back[64];
	br_sha512_context c;
	br_sha512_init(&c);
	br_sha512_update(&c, "msg", 3);
	br_sha512_out(&c, h);
	assert_int_equal(br_rsa_i31_pkcs1_vrfy(sig.p, sig.len, BR_HASH_OID_SHA512, 64, &pk, back), 1);
	assert_memory_equal(back, h, 64);
	assert_int_equal(sign_req(b, blen, "msh", 3, SSH_AGENT_RSA_SHA2_512, &alg, &sig),
			 SSH_AGENT_SIGN_RESPONSE);
	br_rsa_i31_pkcs1_vrfy(sig.p, sig.len, BR_HASH_OID_SHA512, 64, &pk, back);
	assert_memory_not_equal(back, h, 64);
	/* The test hook hashes the top 32 bytes of p (the secret's first
	 * field, after its padding). */
	env.test_hooks = true;
	uint8_t m[AGENT_BLOB_MAX + 64];
	wire_writer_init(&w, m, sizeof m);
	wire_put_u8(&w, SSH_AGENTC_EXTENSION);
	wire_put_cstring(&w, AGENT_EXT_KEYHASH);
	wire_put_string(&w, b, blen);
	assert_int_equal(call(m, w.len, &n), SSH_AGENT_EXTENSION_RESPONSE);
	const uint8_t *p = ag.keys.slot[0].d;
	while (!*p)
		p++;
	assert_int_equal(p - ag.keys.slot[0].d, AGENT_RSA_FACTOR_MAX - AGENT_RSA_KEYGEN_BITS / 16);
	br_sha256_context hc;
	br_sha256_init(&hc);
	br_sha256_update(&hc, p, 32);
	br_sha256_out(&hc, h);
	assert_memory_equal(out + n - 32, h, 32);
	/* Refused where KVM emulates guest code. */
	env.native_cpu = false;
	assert_int_equal(call(m, keygen_msg(m, AGENT_RSA_NAME, "c"), NULL), SSH_AGENT_EXTENSION_FAILURE);
	assert_int_equal(listed(), 1);
}

/* The known answers, before any test. */
static int load_vectors(void **state)
{
	return agent_vectors_load() ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_reader_bounds, setup),
		cmocka_unit_test_setup(test_writer_bounds_and_mpint, setup),
		cmocka_unit_test_setup(test_frame_len, setup),
		cmocka_unit_test_setup(test_parse_add_and_constraints, setup),
		cmocka_unit_test_setup(test_parse_other_messages, setup),
		cmocka_unit_test_setup(test_parse_scalar_forms, setup),
		cmocka_unit_test_setup(test_scalar_range, setup),
		cmocka_unit_test_setup(test_keys_order_replace_full, setup),
		cmocka_unit_test_setup(test_keys_reap, setup),
		cmocka_unit_test_setup(test_add_list_sign_remove, setup),
		cmocka_unit_test_setup(test_add_refusals, setup),
		cmocka_unit_test_setup(test_lock, setup),
		cmocka_unit_test_setup(test_lifetime, setup),
		cmocka_unit_test_setup(test_keygen_query_keyhash, setup),
		cmocka_unit_test_setup(test_ed25519_rfc8032, setup),
		cmocka_unit_test_setup(test_ed25519_add_list_sign_remove, setup),
		cmocka_unit_test_setup(test_ed25519_add_refusals, setup),
		cmocka_unit_test_setup(test_ed25519_keygen, setup),
		cmocka_unit_test_setup(test_rsa_known_answer, setup),
		cmocka_unit_test_setup(test_rsa_add_refusals, setup),
		cmocka_unit_test_setup(test_rsa_import_crt, setup),
		cmocka_unit_test_setup(test_rsa_keygen, setup),
	};
	return cmocka_run_group_tests(tests, load_vectors, NULL);
}

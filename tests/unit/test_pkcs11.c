/* SPDX-License-Identifier: ISC */
/*
 * Unit tests of the PKCS#11 token guest's host-buildable modules
 * (examples/pkcs11): frame bounds, the reader, and the token's request
 * handler on a token initialised through its own requests. Signatures are
 * checked with BearSSL's verifier, which the token never calls. Wiping is
 * checked by searching the token's whole state for a key's scalar after
 * the key was destroyed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <bearssl.h>

#include "../../examples/pkcs11/p11_ec.h"
#include "../../examples/pkcs11/p11_token.h"

static unsigned seeds;

static bool seed(void *ctx, br_hmac_drbg_context *d)
{
	unsigned n = ++seeds;
	br_hmac_drbg_init(d, &br_sha256_vtable, &n, sizeof n);
	return true;
}

static const struct p11_env env = { seed, NULL, NULL };
static struct p11_token tok;
static uint8_t req[P11_BODY_MAX], out[P11_BODY_MAX];
static struct p11_writer w;
static struct p11_reader r;
static const uint8_t app1[P11_APP_ID] = { 1 }, app2[P11_APP_ID] = { 2 };
static const uint8_t p256[] = { 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07 };
static const uint8_t p384[] = { 0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22 };
static uint64_t session, pub, priv;

static void begin(enum p11_op op, const uint8_t *app)
{
	p11_writer_init(&w, req, sizeof req);
	p11_put_request(&w, op, app);
}

/* Sends the request; returns the CK_RV, r positioned on the results. */
static CK_RV send_req(void)
{
	assert_false(w.bad);
	size_t n = p11_token_handle(&tok, req, w.len, out);
	assert_true(n >= 10);
	p11_reader_init(&r, out, n);
	assert_int_equal(p11_get_u8(&r), P11_VERSION);
	assert_int_equal(p11_get_u8(&r), req[1]);
	return p11_get_u64(&r);
}

static uint64_t open_session(const uint8_t *app)
{
	begin(P11_OP_OPEN_SESSION, app);
	p11_put_u64(&w, CKF_SERIAL_SESSION | CKF_RW_SESSION);
	assert_int_equal(send_req(), CKR_OK);
	return p11_get_u64(&r);
}

static CK_RV login(uint64_t s, CK_USER_TYPE who, const char *pin)
{
	begin(P11_OP_LOGIN, app1);
	p11_put_u64(&w, s);
	p11_put_u64(&w, who);
	p11_put_bytes(&w, pin, strlen(pin));
	return send_req();
}

static void keygen(const uint8_t *params, size_t len)
{
	CK_BBOOL yes = 1;
	CK_ATTRIBUTE pt[] = { { CKA_EC_PARAMS, (void *)params, len }, { CKA_TOKEN, &yes, 1 } };
	CK_ATTRIBUTE kt[] = { { CKA_TOKEN, &yes, 1 }, { CKA_ID, "k", 1 } };
	begin(P11_OP_GENERATE_KEY_PAIR, app1);
	p11_put_u64(&w, session);
	p11_put_u64(&w, CKM_EC_KEY_PAIR_GEN);
	p11_put_bytes(&w, NULL, 0);
	p11_put_template(&w, pt, 2);
	p11_put_template(&w, kt, 2);
	assert_int_equal(send_req(), CKR_OK);
	pub = p11_get_u64(&r);
	priv = p11_get_u64(&r);
	assert_true(p11_reader_done(&r));
}

/* A token initialised, with a user PIN, a logged-in RW session and a
 * P-256 key pair, all through requests. */
static int setup(void **state)
{
	uint8_t serial[P11_SERIAL] = "unit", label[P11_LABEL];
	memset(label, ' ', sizeof label);
	p11_token_init(&tok, &env, serial);
	begin(P11_OP_INIT_TOKEN, app1);
	p11_put_bytes(&w, "87654321", 8);
	p11_put_raw(&w, label, sizeof label);
	assert_int_equal(send_req(), CKR_OK);
	session = open_session(app1);
	assert_int_equal(login(session, CKU_SO, "87654321"), CKR_OK);
	begin(P11_OP_INIT_PIN, app1);
	p11_put_u64(&w, session);
	p11_put_bytes(&w, "123456", 6);
	assert_int_equal(send_req(), CKR_OK);
	begin(P11_OP_LOGOUT, app1);
	p11_put_u64(&w, session);
	assert_int_equal(send_req(), CKR_OK);
	assert_int_equal(login(session, CKU_USER, "123456"), CKR_OK);
	keygen(p256, sizeof p256);
	return 0;
}

static const uint8_t *attr(uint64_t obj, uint64_t type, uint32_t *len, CK_RV *rv)
{
	begin(P11_OP_GET_ATTRS, app1);
	p11_put_u64(&w, session);
	p11_put_u64(&w, obj);
	p11_put_u32(&w, 1);
	p11_put_u64(&w, type);
	p11_put_u64(&w, 4096);
	*rv = send_req();
	assert_int_equal(p11_get_u32(&r), 1);
	p11_get_u64(&r);
	const uint8_t *v = p11_get_bytes(&r, len, 4096);
	assert_true(p11_reader_done(&r));
	return v;
}

static void test_frame_bounds(void **state)
{
	uint8_t hdr[4];
	p11_frame_hdr(hdr, P11_BODY_MAX);
	assert_int_equal(p11_frame_len(hdr), P11_BODY_MAX);
	p11_frame_hdr(hdr, P11_BODY_MAX + 1);
	assert_int_equal(p11_frame_len(hdr), 0);
	p11_frame_hdr(hdr, 0);
	assert_int_equal(p11_frame_len(hdr), 0);
	/* A byte string longer than what is left, or than its bound. */
	uint8_t b[] = { 0, 0, 0, 5, 'a', 'b' };
	struct p11_reader rr;
	uint32_t len;
	p11_reader_init(&rr, b, sizeof b);
	assert_null(p11_get_bytes(&rr, &len, 100));
	assert_true(rr.bad);
	b[3] = 2;
	p11_reader_init(&rr, b, sizeof b);
	assert_null(p11_get_bytes(&rr, &len, 1));
	assert_true(rr.bad);
	/* Not a request at all: no reply (the guest hangs up). */
	uint8_t bad[2 + P11_APP_ID] = { 9, P11_OP_PING };
	assert_int_equal(p11_token_handle(&tok, bad, sizeof bad, out), 0);
	bad[0] = P11_VERSION;
	bad[1] = P11_OP_MAX;
	assert_int_equal(p11_token_handle(&tok, bad, sizeof bad, out), 0);
}

/* Signs with mech (single-part, or in three parts), verifies with BearSSL. */
static void sign_verify(uint64_t key, uint64_t pubkey, CK_MECHANISM_TYPE mech, bool multi)
{
	static const char msg[] = "signed by the token";
	uint8_t h[64];
	size_t hlen;
	if (mech == CKM_ECDSA_SHA384) {
		br_sha384_context c;
		br_sha384_init(&c);
		br_sha384_update(&c, msg, sizeof msg);
		br_sha384_out(&c, h);
		hlen = 48;
	} else {
		br_sha256_context c;
		br_sha256_init(&c);
		br_sha256_update(&c, msg, sizeof msg);
		br_sha256_out(&c, h);
		hlen = 32;
	}
	begin(P11_OP_SIGN_INIT, app1);
	p11_put_u64(&w, session);
	p11_put_u64(&w, mech);
	p11_put_bytes(&w, NULL, 0);
	p11_put_u64(&w, key);
	assert_int_equal(send_req(), CKR_OK);
	if (multi) {
		for (size_t off = 0; off < sizeof msg; off += 7) {
			begin(P11_OP_SIGN_UPDATE, app1);
			p11_put_u64(&w, session);
			p11_put_bytes(&w, msg + off, sizeof msg - off < 7 ? sizeof msg - off : 7);
			assert_int_equal(send_req(), CKR_OK);
		}
		begin(P11_OP_SIGN_FINAL, app1);
		p11_put_u64(&w, session);
		p11_put_u8(&w, 0);
		p11_put_u64(&w, 256);
	} else {
		begin(P11_OP_SIGN, app1);
		p11_put_u64(&w, session);
		p11_put_u8(&w, 0);
		p11_put_u64(&w, 256);
		if (mech == CKM_ECDSA)
			p11_put_bytes(&w, h, hlen);
		else
			p11_put_bytes(&w, msg, sizeof msg);
	}
	assert_int_equal(send_req(), CKR_OK);
	uint64_t siglen = p11_get_u64(&r);
	uint32_t got;
	const uint8_t *sig = p11_get_bytes(&r, &got, 256);
	assert_int_equal(siglen, got);
	uint8_t s[P11_EC_SIG_MAX];
	memcpy(s, sig, got);
	uint32_t plen;
	CK_RV rv;
	const uint8_t *pt = attr(pubkey, CKA_EC_POINT, &plen, &rv);
	assert_int_equal(rv, CKR_OK);
	br_ec_public_key pk = { got == 64 ? BR_EC_secp256r1 : BR_EC_secp384r1, (unsigned char *)pt + 2, plen - 2 };
	assert_int_equal(br_ecdsa_i31_vrfy_raw(&br_ec_all_m31, h, hlen, &pk, s, got), 1);
	s[5] ^= 1; /* the control: a changed signature does not verify */
	assert_int_equal(br_ecdsa_i31_vrfy_raw(&br_ec_all_m31, h, hlen, &pk, s, got), 0);
}

static void test_sign(void **state)
{
	sign_verify(priv, pub, CKM_ECDSA_SHA256, false);
	sign_verify(priv, pub, CKM_ECDSA_SHA256, true);
	sign_verify(priv, pub, CKM_ECDSA, false);
	keygen(p384, sizeof p384);
	sign_verify(priv, pub, CKM_ECDSA_SHA384, false);
	sign_verify(priv, pub, CKM_ECDSA_SHA384, true);
}

static bool in_token(const uint8_t *needle, size_t n)
{
	return memmem(&tok, sizeof tok, needle, n) != NULL;
}

static void test_private_value(void **state)
{
	struct p11_object *k = p11_objects_get(&tok.objects, priv);
	assert_non_null(k);
	uint32_t len;
	uint8_t d[32];
	memcpy(d, p11_obj_attr(k, CKA_VALUE, &len), sizeof d);
	assert_int_equal(len, 32);
	CK_RV rv;
	attr(priv, CKA_VALUE, &len, &rv);
	assert_int_equal(rv, CKR_ATTRIBUTE_SENSITIVE);
	assert_int_equal(len, 0);
	assert_null(memmem(out, sizeof out, d, sizeof d));
	/* Nor may it become readable. */
	CK_BBOOL no = 0, yes = 1;
	CK_ATTRIBUTE t[] = { { CKA_SENSITIVE, &no, 1 } };
	begin(P11_OP_SET_ATTRS, app1);
	p11_put_u64(&w, session);
	p11_put_u64(&w, priv);
	p11_put_template(&w, t, 1);
	assert_int_equal(send_req(), CKR_ATTRIBUTE_READ_ONLY);
	/* A search by value finds nothing. */
	CK_ATTRIBUTE f[] = { { CKA_VALUE, d, sizeof d } };
	begin(P11_OP_FIND_INIT, app1);
	p11_put_u64(&w, session);
	p11_put_template(&w, f, 1);
	assert_int_equal(send_req(), CKR_OK);
	begin(P11_OP_FIND, app1);
	p11_put_u64(&w, session);
	p11_put_u32(&w, 10);
	assert_int_equal(send_req(), CKR_OK);
	assert_int_equal(p11_get_u32(&r), 0);
	/* Imports that ask for an extractable or readable key are refused. */
	CK_OBJECT_CLASS cls = CKO_PRIVATE_KEY;
	CK_KEY_TYPE kt = CKK_EC;
	uint8_t v[32] = { [31] = 7 };
	for (int i = 0; i < 2; i++) {
		CK_ATTRIBUTE imp[] = { { CKA_CLASS, &cls, sizeof cls }, { CKA_KEY_TYPE, &kt, sizeof kt },
				       { CKA_EC_PARAMS, (void *)p256, sizeof p256 }, { CKA_VALUE, v, sizeof v },
				       { i ? CKA_EXTRACTABLE : CKA_SENSITIVE, i ? &yes : &no, 1 } };
		begin(P11_OP_CREATE_OBJECT, app1);
		p11_put_u64(&w, session);
		p11_put_template(&w, imp, 5);
		assert_int_equal(send_req(), CKR_ATTRIBUTE_VALUE_INVALID);
	}
	/* Destroyed: no copy of the scalar is left anywhere in the token. */
	assert_true(in_token(d, sizeof d));
	begin(P11_OP_DESTROY_OBJECT, app1);
	p11_put_u64(&w, session);
	p11_put_u64(&w, priv);
	assert_int_equal(send_req(), CKR_OK);
	assert_false(in_token(d, sizeof d));
}

static void test_sessions_and_pins(void **state)
{
	assert_int_equal(login(session, CKU_USER, "123456"), CKR_USER_ALREADY_LOGGED_IN);
	/* Another application cannot use this one's session. */
	begin(P11_OP_SESSION_INFO, app2);
	p11_put_u64(&w, session);
	assert_int_equal(send_req(), CKR_SESSION_HANDLE_INVALID);
	/* ... nor see its private objects. */
	uint64_t s2 = open_session(app2);
	begin(P11_OP_GET_ATTRS, app2);
	p11_put_u64(&w, s2);
	p11_put_u64(&w, priv);
	p11_put_u32(&w, 0);
	assert_int_equal(send_req(), CKR_OBJECT_HANDLE_INVALID);
	begin(P11_OP_LOGOUT, app1);
	p11_put_u64(&w, session);
	assert_int_equal(send_req(), CKR_OK);
	assert_int_equal(login(session, CKU_USER, "654321"), CKR_PIN_INCORRECT);
	begin(P11_OP_SET_PIN, app1);
	p11_put_u64(&w, session);
	p11_put_bytes(&w, "123456", 6);
	p11_put_bytes(&w, "654321", 6);
	assert_int_equal(send_req(), CKR_OK);
	assert_int_equal(login(session, CKU_USER, "123456"), CKR_PIN_INCORRECT);
	assert_int_equal(login(session, CKU_USER, "654321"), CKR_OK);
	/* A request cut short is CKR_ARGUMENTS_BAD. */
	begin(P11_OP_SESSION_INFO, app1);
	p11_put_u32(&w, 1);
	assert_int_equal(send_req(), CKR_ARGUMENTS_BAD);
}

/* Applications that come and go (pings from 2 * P11_APPS_MAX new ids)
 * take the slots of others without sessions, never app1's. */
static void test_apps_evicted(void **state)
{
	for (unsigned i = 0; i < 2 * P11_APPS_MAX; i++) {
		uint8_t id[P11_APP_ID] = { 0xa0, (uint8_t)i, (uint8_t)(i >> 8) };
		begin(P11_OP_PING, id);
		assert_int_equal(send_req(), CKR_OK);
	}
	begin(P11_OP_SESSION_INFO, app1);
	p11_put_u64(&w, session);
	assert_int_equal(send_req(), CKR_OK);
	assert_int_equal(p11_get_u64(&r), CKS_RW_USER_FUNCTIONS);
}

static void test_blob(void **state)
{
	static struct p11_objects copy;
	static uint8_t blob[P11_OBJECTS_MAX * (P11_OBJ_DATA + 2048)], again[sizeof blob];
	size_t n = p11_objects_save(&tok.objects, blob, sizeof blob);
	assert_true(n > 0);
	assert_true(p11_objects_load(&copy, blob, n));
	assert_int_equal(p11_objects_save(&copy, again, sizeof again), n);
	assert_memory_equal(blob, again, n);
	assert_non_null(p11_objects_get(&copy, priv));
	assert_false(p11_objects_load(&copy, blob, n - 1));
	assert_null(p11_objects_get(&copy, priv));
	blob[n - 1] ^= 0x80; /* next_handle changed: still well-formed */
	blob[12] ^= 0xff;    /* the first handle: now past next_handle */
	assert_false(p11_objects_load(&copy, blob, n));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_frame_bounds, setup),
		cmocka_unit_test_setup(test_sign, setup),
		cmocka_unit_test_setup(test_private_value, setup),
		cmocka_unit_test_setup(test_sessions_and_pins, setup),
		cmocka_unit_test_setup(test_apps_evicted, setup),
		cmocka_unit_test_setup(test_blob, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: ISC */
/*
 * Unit tests of the PKCS#11 token guest's host-buildable modules
 * (services/pkcs11): frame bounds, the reader, and the token's request
 * handler on a token initialised through its own requests. Signatures are
 * checked with BearSSL's verifier (ECDSA) and OpenSSL's (RSA, Ed25519),
 * which the token never calls. Wiping is
 * checked by searching the token's whole state for a key's scalar after
 * the key was destroyed.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <cpuid.h>
#include <gmp.h>

#include <bearssl.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>

#include "p11_ec.h"
#include "p11_ossl.h"
#include "p11_rsa.h"
#include "p11_token.h"

static unsigned seeds;

static bool seed(void *ctx, br_hmac_drbg_context *d)
{
	unsigned n = ++seeds;
	br_hmac_drbg_init(d, &br_sha256_vtable, &n, sizeof n);
	return true;
}

static const struct p11_env env = { seed, NULL, NULL };
/* The token the requests go to (cur: tok, or tokb for the tests that
 * move keys between two tokens). */
static struct p11_token tok, tokb, *cur = &tok;
/* Values no reply may hold (the wrap tests register keys' values). */
static const uint8_t *watched[4];
static size_t nwatched, watched_len[4];
static uint8_t req[P11_BODY_MAX], out[P11_BODY_MAX];
static struct wire_writer w;
static struct wire_reader r;
static const uint8_t app1[P11_APP_ID] = { 1 }, app2[P11_APP_ID] = { 2 };
static const uint8_t p256[] = { 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07 };
static const uint8_t p384[] = { 0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22 };
static uint64_t session, pub, priv;

static void begin(enum p11_op op, const uint8_t *app)
{
	wire_writer_init(&w, req, sizeof req);
	p11_put_request(&w, op, app);
}

/* A request from app1 on the session of setup(), its handle written. */
static void begin_session(enum p11_op op)
{
	begin(op, app1);
	wire_put_u64(&w, session);
}

/* Sends the request; returns the CK_RV, r positioned on the results. */
static CK_RV send_req(void)
{
	assert_false(w.bad);
	size_t n = p11_token_handle(cur, req, w.len, out);
	assert_true(n >= 10);
	for (size_t i = 0; i < nwatched; i++)
		if (watched[i])
			assert_null(memmem(out, n, watched[i], watched_len[i]));
	wire_reader_init(&r, out, n);
	assert_int_equal(wire_get_u8(&r), P11_VERSION);
	assert_int_equal(wire_get_u8(&r), req[1]);
	return wire_get_u64(&r);
}

static uint64_t open_session(const uint8_t *app)
{
	begin(P11_OP_OPEN_SESSION, app);
	wire_put_u64(&w, CKF_SERIAL_SESSION | CKF_RW_SESSION);
	assert_int_equal(send_req(), CKR_OK);
	return wire_get_u64(&r);
}

static CK_RV login(uint64_t s, CK_USER_TYPE who, const char *pin)
{
	begin(P11_OP_LOGIN, app1);
	wire_put_u64(&w, s);
	wire_put_u64(&w, who);
	wire_put_string(&w, pin, strlen(pin));
	return send_req();
}

/* A key pair by mech from two-attribute templates: the CK_RV; pub and
 * priv set if CKR_OK. */
static CK_RV gen_pair(CK_MECHANISM_TYPE mech, CK_ATTRIBUTE pt[2], CK_ATTRIBUTE kt[2])
{
	begin_session(P11_OP_GENERATE_KEY_PAIR);
	wire_put_u64(&w, mech);
	wire_put_string(&w, NULL, 0);
	p11_put_template(&w, pt, 2);
	p11_put_template(&w, kt, 2);
	CK_RV rv = send_req();
	if (rv == CKR_OK) {
		pub = wire_get_u64(&r);
		priv = wire_get_u64(&r);
		assert_true(wire_done(&r));
	}
	return rv;
}

static void keygen(const uint8_t *params, size_t len)
{
	CK_BBOOL yes = 1;
	CK_ATTRIBUTE pt[] = { { CKA_EC_PARAMS, (void *)params, len }, { CKA_TOKEN, &yes, 1 } };
	CK_ATTRIBUTE kt[] = { { CKA_TOKEN, &yes, 1 }, { CKA_ID, "k", 1 } };
	assert_int_equal(gen_pair(CKM_EC_KEY_PAIR_GEN, pt, kt), CKR_OK);
}

/* The result of SIGN, SIGN_FINAL or DECRYPT: u64 length, then the bytes
 * (none after a length query or with CKR_BUFFER_TOO_SMALL), which go to
 * dst (room for cap), *got of them. Returns the length. */
static uint64_t get_result(uint8_t *dst, size_t cap, uint32_t *got)
{
	uint64_t n = wire_get_u64(&r);
	struct wire_bytes v = p11_get_bytes(&r, P11_BODY_MAX);
	assert_true(wire_done(&r));
	assert_true(v.len == 0 || v.len == n);
	assert_true(v.len <= cap);
	if (v.len)
		memcpy(dst, v.p, v.len);
	*got = (uint32_t)v.len;
	return n;
}

/* A token initialised, with a user PIN, a logged-in RW session and a
 * P-256 key pair, all through requests. */
/* Token t initialised through requests, made the current one. */
static void init_token_on(struct p11_token *t)
{
	uint8_t serial[P11_SERIAL] = "unit", label[P11_LABEL];
	memset(label, ' ', sizeof label);
	cur = t;
	p11_token_init(t, &env, serial);
	begin(P11_OP_INIT_TOKEN, app1);
	wire_put_string(&w, "87654321", 8);
	wire_put_raw(&w, label, sizeof label);
	assert_int_equal(send_req(), CKR_OK);
	session = open_session(app1);
	assert_int_equal(login(session, CKU_SO, "87654321"), CKR_OK);
	begin_session(P11_OP_INIT_PIN);
	wire_put_string(&w, "123456", 6);
	assert_int_equal(send_req(), CKR_OK);
	begin_session(P11_OP_LOGOUT);
	assert_int_equal(send_req(), CKR_OK);
	assert_int_equal(login(session, CKU_USER, "123456"), CKR_OK);
	keygen(p256, sizeof p256);
}

static int setup(void **state)
{
	nwatched = 0;
	init_token_on(&tok);
	return 0;
}

static const uint8_t *attr(uint64_t obj, uint64_t type, uint32_t *len, CK_RV *rv)
{
	begin_session(P11_OP_GET_ATTRS);
	wire_put_u64(&w, obj);
	wire_put_u32(&w, 1);
	wire_put_u64(&w, type);
	wire_put_u64(&w, 4096);
	*rv = send_req();
	assert_int_equal(wire_get_u32(&r), 1);
	wire_get_u64(&r);
	struct wire_bytes v = p11_get_bytes(&r, 4096);
	assert_true(wire_done(&r));
	*len = (uint32_t)v.len;
	return v.p;
}

static void test_frame_bounds(void **state)
{
	uint8_t hdr[4];
	wire_frame_hdr(hdr, P11_BODY_MAX);
	assert_int_equal(p11_frame_len(hdr), P11_BODY_MAX);
	wire_frame_hdr(hdr, P11_BODY_MAX + 1);
	assert_int_equal(p11_frame_len(hdr), 0);
	wire_frame_hdr(hdr, 0);
	assert_int_equal(p11_frame_len(hdr), 0);
	/* A byte string longer than what is left, or than its bound. */
	uint8_t b[] = { 0, 0, 0, 5, 'a', 'b' };
	struct wire_reader rr;
	wire_reader_init(&rr, b, sizeof b);
	assert_null(p11_get_bytes(&rr, 100).p);
	assert_true(rr.bad);
	b[3] = 2;
	wire_reader_init(&rr, b, sizeof b);
	assert_null(p11_get_bytes(&rr, 1).p);
	assert_true(rr.bad);
	/* Not a request at all: no reply (the guest hangs up). */
	uint8_t bad[2 + P11_APP_ID] = { 9, P11_OP_PING };
	assert_int_equal(p11_token_handle(&tok, bad, sizeof bad, out), 0);
	bad[0] = P11_VERSION;
	bad[1] = P11_OP_MAX;
	assert_int_equal(p11_token_handle(&tok, bad, sizeof bad, out), 0);
}

/* Signs with mech (single-part, or in three parts), verifies with BearSSL. */
static void put_sign_init(uint64_t key, CK_MECHANISM_TYPE mech)
{
	wire_put_u64(&w, session);
	wire_put_u64(&w, mech);
	wire_put_string(&w, NULL, 0);
	wire_put_u64(&w, key);
}

/* Signs with SIGN_INIT then SIGN (or the multi-part calls), or with both
 * in one SIGN_INIT_SIGN request (with_init), and verifies. */
static void sign_verify(uint64_t key, uint64_t pubkey, CK_MECHANISM_TYPE mech, bool multi, bool with_init)
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
	if (!with_init) {
		begin(P11_OP_SIGN_INIT, app1);
		put_sign_init(key, mech);
		assert_int_equal(send_req(), CKR_OK);
	}
	if (multi) {
		for (size_t off = 0; off < sizeof msg; off += 7) {
			begin_session(P11_OP_SIGN_UPDATE);
			wire_put_string(&w, msg + off, sizeof msg - off < 7 ? sizeof msg - off : 7);
			assert_int_equal(send_req(), CKR_OK);
		}
		begin_session(P11_OP_SIGN_FINAL);
		wire_put_u8(&w, 0);
		wire_put_u64(&w, 256);
	} else {
		begin(with_init ? P11_OP_SIGN_INIT_SIGN : P11_OP_SIGN, app1);
		if (with_init)
			put_sign_init(key, mech);
		wire_put_u64(&w, session);
		wire_put_u8(&w, 0);
		wire_put_u64(&w, 256);
		if (mech == CKM_ECDSA)
			wire_put_string(&w, h, hlen);
		else
			wire_put_string(&w, msg, sizeof msg);
	}
	assert_int_equal(send_req(), CKR_OK);
	uint8_t s[P11_EC_SIG_MAX];
	uint32_t got;
	uint64_t siglen = get_result(s, sizeof s, &got);
	assert_int_equal(siglen, got);
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
	sign_verify(priv, pub, CKM_ECDSA_SHA256, false, false);
	sign_verify(priv, pub, CKM_ECDSA_SHA256, true, false);
	sign_verify(priv, pub, CKM_ECDSA, false, false);
	sign_verify(priv, pub, CKM_ECDSA_SHA256, false, true);
	sign_verify(priv, pub, CKM_ECDSA, false, true);
	keygen(p384, sizeof p384);
	sign_verify(priv, pub, CKM_ECDSA_SHA384, false, false);
	sign_verify(priv, pub, CKM_ECDSA_SHA384, true, false);
	sign_verify(priv, pub, CKM_ECDSA_SHA384, false, true);
}

/* A plain SIGN on the session: its CK_RV (whether an operation is on). */
static CK_RV sign_plain(const uint8_t *data, size_t len)
{
	begin_session(P11_OP_SIGN);
	wire_put_u8(&w, 0);
	wire_put_u64(&w, 256);
	wire_put_string(&w, data, len);
	return send_req();
}

/* SIGN_INIT_SIGN of a hash h (or of nothing, hlen 0) with key: its CK_RV. */
static CK_RV init_sign(uint64_t key, const uint8_t *h, size_t hlen, bool query)
{
	begin(P11_OP_SIGN_INIT_SIGN, app1);
	put_sign_init(key, CKM_ECDSA);
	wire_put_u64(&w, session);
	wire_put_u8(&w, query);
	wire_put_u64(&w, query ? 0 : 256);
	wire_put_string(&w, h, hlen);
	return send_req();
}

/* SIGN_INIT_SIGN: a SIGN_INIT part the token refuses answers alone and
 * starts no operation; a length query keeps the operation it started; a
 * SIGN part that fails ends it. */
static void test_sign_init_sign_errors(void **state)
{
	static const uint8_t h[32] = { 1, 2, 3 };
	assert_int_equal(init_sign(pub, h, sizeof h, false), CKR_KEY_TYPE_INCONSISTENT);
	assert_true(wire_done(&r)); /* the CK_RV alone */
	assert_int_equal(sign_plain(h, sizeof h), CKR_OPERATION_NOT_INITIALIZED);
	assert_int_equal(init_sign(priv + 1000, h, sizeof h, false), CKR_KEY_HANDLE_INVALID);
	assert_int_equal(sign_plain(h, sizeof h), CKR_OPERATION_NOT_INITIALIZED);

	assert_int_equal(init_sign(priv, h, sizeof h, true), CKR_OK);
	assert_int_equal(wire_get_u64(&r), 64);
	assert_int_equal(sign_plain(h, sizeof h), CKR_OK); /* the operation went on */
	assert_int_equal(sign_plain(h, sizeof h), CKR_OPERATION_NOT_INITIALIZED);

	assert_int_equal(init_sign(priv, NULL, 0, false), CKR_DATA_LEN_RANGE); /* no empty hash */
	assert_int_equal(sign_plain(h, sizeof h), CKR_OPERATION_NOT_INITIALIZED);
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
	begin_session(P11_OP_SET_ATTRS);
	wire_put_u64(&w, priv);
	p11_put_template(&w, t, 1);
	assert_int_equal(send_req(), CKR_ATTRIBUTE_READ_ONLY);
	/* A search by value finds nothing. */
	CK_ATTRIBUTE f[] = { { CKA_VALUE, d, sizeof d } };
	begin_session(P11_OP_FIND_INIT);
	p11_put_template(&w, f, 1);
	assert_int_equal(send_req(), CKR_OK);
	begin_session(P11_OP_FIND);
	wire_put_u32(&w, 10);
	assert_int_equal(send_req(), CKR_OK);
	assert_int_equal(wire_get_u32(&r), 0);
	/* Imports that ask for a readable key, or an extractable one that
	 * could be wrapped under any key, are refused. */
	CK_OBJECT_CLASS cls = CKO_PRIVATE_KEY;
	CK_KEY_TYPE kt = CKK_EC;
	uint8_t v[32] = { [31] = 7 };
	for (int i = 0; i < 2; i++) {
		CK_ATTRIBUTE imp[] = { { CKA_CLASS, &cls, sizeof cls }, { CKA_KEY_TYPE, &kt, sizeof kt },
				       { CKA_EC_PARAMS, (void *)p256, sizeof p256 }, { CKA_VALUE, v, sizeof v },
				       { i ? CKA_EXTRACTABLE : CKA_SENSITIVE, i ? &yes : &no, 1 },
				       { CKA_WRAP_WITH_TRUSTED, &no, 1 } };
		begin_session(P11_OP_CREATE_OBJECT);
		p11_put_template(&w, imp, 5 + i);
		assert_int_equal(send_req(), CKR_ATTRIBUTE_VALUE_INVALID);
	}
	/* A signature keeps OpenSSL's object for the key... */
	static const uint8_t h[32] = { 1, 2, 3 };
	p11_ossl_forget();
	assert_int_equal(init_sign(priv, h, sizeof h, false), CKR_OK);
	assert_true(p11_ossl_ec_kept());
	/* Destroyed: no copy of the scalar is left anywhere in the token... */
	assert_true(in_token(d, sizeof d));
	begin_session(P11_OP_DESTROY_OBJECT);
	wire_put_u64(&w, priv);
	assert_int_equal(send_req(), CKR_OK);
	assert_false(in_token(d, sizeof d));
	/* ...and OpenSSL's object went, cleared, with it. */
	assert_false(p11_ossl_ec_kept());
}

static void test_sessions_and_pins(void **state)
{
	assert_int_equal(login(session, CKU_USER, "123456"), CKR_USER_ALREADY_LOGGED_IN);
	/* Another application cannot use this one's session. */
	begin(P11_OP_SESSION_INFO, app2);
	wire_put_u64(&w, session);
	assert_int_equal(send_req(), CKR_SESSION_HANDLE_INVALID);
	/* ... nor see its private objects. */
	uint64_t s2 = open_session(app2);
	begin(P11_OP_GET_ATTRS, app2);
	wire_put_u64(&w, s2);
	wire_put_u64(&w, priv);
	wire_put_u32(&w, 0);
	assert_int_equal(send_req(), CKR_OBJECT_HANDLE_INVALID);
	begin_session(P11_OP_LOGOUT);
	assert_int_equal(send_req(), CKR_OK);
	assert_int_equal(login(session, CKU_USER, "654321"), CKR_PIN_INCORRECT);
	begin_session(P11_OP_SET_PIN);
	wire_put_string(&w, "123456", 6);
	wire_put_string(&w, "654321", 6);
	assert_int_equal(send_req(), CKR_OK);
	assert_int_equal(login(session, CKU_USER, "123456"), CKR_PIN_INCORRECT);
	assert_int_equal(login(session, CKU_USER, "654321"), CKR_OK);
	/* A request cut short is CKR_ARGUMENTS_BAD. */
	begin(P11_OP_SESSION_INFO, app1);
	wire_put_u32(&w, 1);
	assert_int_equal(send_req(), CKR_ARGUMENTS_BAD);
}

/* The serial number: the one the token was given, until C_InitToken
 * makes a new token in memory, which gets a new one (16 hex digits). */
static void test_serial(void **state)
{
	begin(P11_OP_TOKEN_INFO, app1);
	assert_int_equal(send_req(), CKR_OK);
	wire_get_raw(&r, P11_LABEL);
	assert_memory_equal(wire_get_raw(&r, P11_SERIAL), "unit", 4);
	begin(P11_OP_CLOSE_ALL, app1);
	assert_int_equal(send_req(), CKR_OK);
	uint8_t label[P11_LABEL];
	memset(label, ' ', sizeof label);
	begin(P11_OP_INIT_TOKEN, app1);
	wire_put_string(&w, "87654321", 8);
	wire_put_raw(&w, label, sizeof label);
	assert_int_equal(send_req(), CKR_OK);
	begin(P11_OP_TOKEN_INFO, app1);
	assert_int_equal(send_req(), CKR_OK);
	wire_get_raw(&r, P11_LABEL);
	const uint8_t *serial = wire_get_raw(&r, P11_SERIAL);
	assert_memory_not_equal(serial, "unit", 4);
	for (int i = 0; i < P11_SERIAL; i++)
		assert_non_null(memchr("0123456789abcdef", serial[i], 16));
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
	begin_session(P11_OP_SESSION_INFO);
	assert_int_equal(send_req(), CKR_OK);
	assert_int_equal(wire_get_u64(&r), CKS_RW_USER_FUNCTIONS);
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

/* ---- RSA */

/* services/pkcs11/guest/mbedtls_guest/pthread.h gives the guest a
 * pthread_mutex_t of this size and alignment, so that Mbed TLS's RSA
 * context has the layout the library was built with. */
_Static_assert(sizeof(pthread_mutex_t) == 40 && _Alignof(pthread_mutex_t) == 8, "glibc's x86-64 mutex");

static void rsa_keygen(CK_ULONG bits, CK_RV want)
{
	CK_BBOOL yes = 1;
	static const uint8_t f4[] = { 1, 0, 1 };
	CK_ATTRIBUTE pt[] = { { CKA_MODULUS_BITS, &bits, sizeof bits }, { CKA_PUBLIC_EXPONENT, (void *)f4, 3 } };
	CK_ATTRIBUTE kt[] = { { CKA_TOKEN, &yes, 1 }, { CKA_DECRYPT, &yes, 1 } };
	assert_int_equal(gen_pair(CKM_RSA_PKCS_KEY_PAIR_GEN, pt, kt), want);
}

/* The token's public key as OpenSSL's, from CKA_MODULUS and
 * CKA_PUBLIC_EXPONENT. */
static EVP_PKEY *rsa_pubkey(uint64_t obj)
{
	uint32_t nlen, elen;
	CK_RV rv;
	uint8_t n[P11_RSA_BYTES_MAX], e[8];
	const uint8_t *v = attr(obj, CKA_MODULUS, &nlen, &rv);
	assert_int_equal(rv, CKR_OK);
	memcpy(n, v, nlen);
	v = attr(obj, CKA_PUBLIC_EXPONENT, &elen, &rv);
	assert_int_equal(rv, CKR_OK);
	assert_in_range(elen, 1, sizeof e);
	memcpy(e, v, elen);
	BIGNUM *bn = BN_bin2bn(n, (int)nlen, NULL), *be = BN_bin2bn(e, (int)elen, NULL);
	OSSL_PARAM_BLD *b = OSSL_PARAM_BLD_new();
	assert_true(OSSL_PARAM_BLD_push_BN(b, OSSL_PKEY_PARAM_RSA_N, bn));
	assert_true(OSSL_PARAM_BLD_push_BN(b, OSSL_PKEY_PARAM_RSA_E, be));
	OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(b);
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
	EVP_PKEY *pk = NULL;
	assert_int_equal(EVP_PKEY_fromdata_init(ctx), 1);
	assert_int_equal(EVP_PKEY_fromdata(ctx, &pk, EVP_PKEY_PUBLIC_KEY, params), 1);
	EVP_PKEY_CTX_free(ctx);
	OSSL_PARAM_free(params);
	OSSL_PARAM_BLD_free(b);
	BN_free(bn);
	BN_free(be);
	return pk;
}

/* The token's private key as OpenSSL's, its parts read out of the
 * token's state (only a test can). */
static EVP_PKEY *rsa_privkey(uint64_t obj)
{
	static const char *const names[P11_RSA_PARTS] = {
		OSSL_PKEY_PARAM_RSA_N,	       OSSL_PKEY_PARAM_RSA_E,	      OSSL_PKEY_PARAM_RSA_D,
		OSSL_PKEY_PARAM_RSA_FACTOR1,   OSSL_PKEY_PARAM_RSA_FACTOR2,   OSSL_PKEY_PARAM_RSA_EXPONENT1,
		OSSL_PKEY_PARAM_RSA_EXPONENT2, OSSL_PKEY_PARAM_RSA_COEFFICIENT1,
	};
	const struct p11_object *k = p11_objects_get(&tok.objects, obj);
	assert_non_null(k);
	OSSL_PARAM_BLD *b = OSSL_PARAM_BLD_new();
	BIGNUM *bn[P11_RSA_PARTS];
	for (int i = 0; i < P11_RSA_PARTS; i++) {
		uint32_t len;
		const uint8_t *v = p11_obj_attr(k, p11_rsa_attr[i], &len);
		assert_non_null(v);
		bn[i] = BN_bin2bn(v, (int)len, NULL);
		assert_true(OSSL_PARAM_BLD_push_BN(b, names[i], bn[i]));
	}
	OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(b);
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
	EVP_PKEY *pk = NULL;
	assert_int_equal(EVP_PKEY_fromdata_init(ctx), 1);
	assert_int_equal(EVP_PKEY_fromdata(ctx, &pk, EVP_PKEY_KEYPAIR, params), 1);
	EVP_PKEY_CTX_free(ctx);
	OSSL_PARAM_free(params);
	OSSL_PARAM_BLD_free(b);
	for (int i = 0; i < P11_RSA_PARTS; i++)
		BN_free(bn[i]);
	return pk;
}

static const char rsa_msg[] = "signed by the token with RSA";

static const EVP_MD *md_of(CK_MECHANISM_TYPE hash)
{
	return hash == CKM_SHA_1 ? EVP_sha1() : hash == CKM_SHA384 ? EVP_sha384()
				: hash == CKM_SHA512 ? EVP_sha512() : EVP_sha256();
}

/* Signs rsa_msg (or its hash, or its DigestInfo, as mech takes it) and
 * returns the CK_RV; the signature in sig. */
static CK_RV rsa_sign(uint64_t key, CK_MECHANISM_TYPE mech, CK_MECHANISM_TYPE hash, const void *params,
		      size_t plen, bool multi, uint8_t *sig, uint32_t *siglen)
{
	uint8_t in[19 + 64];
	unsigned hl;
	EVP_Digest(rsa_msg, sizeof rsa_msg, in + 19, &hl, md_of(hash), NULL);
	const uint8_t *data = (const uint8_t *)rsa_msg;
	size_t dlen = sizeof rsa_msg;
	if (mech == CKM_RSA_PKCS) { /* SHA-256's DigestInfo prefix (RFC 8017 9.2) */
		static const uint8_t prefix[19] = { 0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01,
						    0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20 };
		memcpy(in, prefix, sizeof prefix);
		data = in, dlen = 19 + hl;
	} else if (mech == CKM_RSA_PKCS_PSS) {
		data = in + 19, dlen = hl;
	}
	begin_session(P11_OP_SIGN_INIT);
	wire_put_u64(&w, mech);
	wire_put_string(&w, params, plen);
	wire_put_u64(&w, key);
	CK_RV rv = send_req();
	if (rv != CKR_OK)
		return rv;
	if (multi) {
		begin_session(P11_OP_SIGN_UPDATE);
		wire_put_string(&w, data, 5);
		assert_int_equal(send_req(), CKR_OK);
		begin_session(P11_OP_SIGN_UPDATE);
		wire_put_string(&w, data + 5, dlen - 5);
		assert_int_equal(send_req(), CKR_OK);
		begin_session(P11_OP_SIGN_FINAL);
		wire_put_u8(&w, 0);
		wire_put_u64(&w, P11_RSA_BYTES_MAX);
	} else {
		begin_session(P11_OP_SIGN);
		wire_put_u8(&w, 0);
		wire_put_u64(&w, P11_RSA_BYTES_MAX);
		wire_put_string(&w, data, dlen);
	}
	if ((rv = send_req()) != CKR_OK)
		return rv;
	uint64_t n = get_result(sig, P11_RSA_BYTES_MAX, siglen);
	assert_int_equal(n, *siglen);
	return CKR_OK;
}

/* OpenSSL's verdict on sig over rsa_msg: PKCS#1 v1.5 (salt < 0) or PSS
 * with that exact salt length. */
static int rsa_verify(EVP_PKEY *pk, CK_MECHANISM_TYPE hash, int salt, const uint8_t *sig, size_t len)
{
	EVP_MD_CTX *m = EVP_MD_CTX_new();
	EVP_PKEY_CTX *pc = NULL;
	assert_int_equal(EVP_DigestVerifyInit(m, &pc, md_of(hash), NULL, pk), 1);
	if (salt >= 0) {
		assert_int_equal(EVP_PKEY_CTX_set_rsa_padding(pc, RSA_PKCS1_PSS_PADDING), 1);
		assert_int_equal(EVP_PKEY_CTX_set_rsa_pss_saltlen(pc, salt), 1);
		assert_int_equal(EVP_PKEY_CTX_set_rsa_mgf1_md(pc, md_of(hash)), 1);
	}
	int ok = EVP_DigestVerify(m, sig, len, (const uint8_t *)rsa_msg, sizeof rsa_msg);
	EVP_MD_CTX_free(m);
	return ok;
}

static void rsa_sign_verify(EVP_PKEY *pk, uint64_t key, CK_MECHANISM_TYPE mech, CK_MECHANISM_TYPE hash,
			    int salt, bool multi)
{
	CK_RSA_PKCS_PSS_PARAMS pp = { hash, p11_rsa_mgf1(hash), salt > 0 ? (CK_ULONG)salt : 0 };
	uint8_t sig[P11_RSA_BYTES_MAX];
	uint32_t len;
	assert_int_equal(rsa_sign(key, mech, hash, salt >= 0 ? &pp : NULL, salt >= 0 ? sizeof pp : 0, multi, sig,
				  &len),
			 CKR_OK);
	assert_int_equal(len, (size_t)EVP_PKEY_get_size(pk));
	assert_int_equal(rsa_verify(pk, hash, salt, sig, len), 1);
	sig[len / 2] ^= 1; /* the control: a changed signature does not verify */
	assert_int_not_equal(rsa_verify(pk, hash, salt, sig, len), 1);
}

/* GMP's allocator as the token finds it: counts the blocks freed, and
 * those that still held a nonzero byte when they came back. */
static void *(*real_alloc)(size_t);
static void *(*real_realloc)(void *, size_t, size_t);
static void (*real_free)(void *, size_t);
static unsigned gmp_freed, gmp_freed_dirty;

static void check_free(void *p, size_t n)
{
	gmp_freed++;
	for (size_t i = 0; i < n; i++)
		if (((const uint8_t *)p)[i]) {
			gmp_freed_dirty++;
			break;
		}
	real_free(p, n);
}

/* An RSA signature on Nettle keeps the key and its arithmetic in GMP's
 * heap blocks: each comes back to the allocator wiped (p11_rsa.c), and
 * the allocator the token found is the one left in place after. (On
 * OpenSSL's path, GMP holds the key and the check's numbers.) */
static void test_rsa_sign_wipes(void **state)
{
	rsa_keygen(2048, CKR_OK);
	EVP_PKEY *pk = rsa_pubkey(pub);
	/* It runs twice (on each path): a first run that failed left
	 * check_free in place, which is not the allocator to go back to. */
	void (*found)(void *, size_t);
	mp_get_memory_functions(NULL, NULL, &found);
	if (found != check_free)
		mp_get_memory_functions(&real_alloc, &real_realloc, &real_free);
	mp_set_memory_functions(real_alloc, real_realloc, check_free);
	gmp_freed = gmp_freed_dirty = 0;
	mpz_t control;
	mpz_init_set_ui(control, 1);
	mpz_mul_2exp(control, control, 4096); /* the control: a block freed unwiped */
	mpz_clear(control);
	assert_int_equal(gmp_freed, 1);
	assert_int_equal(gmp_freed_dirty, 1);
	gmp_freed = gmp_freed_dirty = 0;
	rsa_sign_verify(pk, priv, CKM_SHA256_RSA_PKCS, CKM_SHA256, -1, false);
	rsa_sign_verify(pk, priv, CKM_RSA_PKCS_PSS, CKM_SHA256, 32, false);
	void (*after)(void *, size_t);
	mp_get_memory_functions(NULL, NULL, &after);
	mp_set_memory_functions(real_alloc, real_realloc, real_free);
	assert_true(after == check_free);
	assert_true(gmp_freed > 10);
	assert_int_equal(gmp_freed_dirty, 0);
	EVP_PKEY_free(pk);
}

/* k's parts copied into bad (viewed by f), with one bit of part i
 * flipped, and of part j too if j >= 0. */
static void faulted_key(const struct p11_rsa_key *k, const uint8_t *buf, uint8_t *bad, struct p11_rsa_key *f,
			int i, int j)
{
	memcpy(bad, buf, P11_RSA_BUF);
	*f = *k;
	for (int n = 0; n < P11_RSA_PARTS; n++)
		f->v[n] = k->v[n] ? bad + (k->v[n] - buf) : NULL;
	bad[f->v[i] - bad + k->len[i] / 2] ^= 0x10;
	if (j >= 0)
		bad[f->v[j] - bad + k->len[j] / 2] ^= 0x10;
}

/* The four signatures test_rsa_sign_faulted asks of a key: PKCS#1 v1.5
 * with SHA-256 and SHA-1, raw CKM_RSA_PKCS, PSS; each must give ok. */
static void sign_four(const struct p11_rsa_key *key, br_hmac_drbg_context *drbg, bool ok,
		      uint8_t sig[4][P11_RSA_BYTES_MAX])
{
	static const uint8_t h[64] = { 1, 2, 3 };
	static const uint8_t info[] = { 0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65,
					0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20, 1, 2, 3 };
	uint8_t di[sizeof info + 29] = { 0 };
	memcpy(di, info, sizeof info);
	assert_int_equal(p11_rsa_sign_pkcs1(key, drbg, CKM_SHA256, h, 32, sig[0]), ok);
	assert_int_equal(p11_rsa_sign_pkcs1(key, drbg, CKM_SHA_1, h, 20, sig[1]), ok);
	assert_int_equal(p11_rsa_sign_pkcs1(key, drbg, 0, di, 51, sig[2]), ok);
	assert_int_equal(p11_rsa_sign_pss(key, drbg, CKM_SHA256, 32, h, 32, sig[3]), ok);
	if (ok)
		assert_true(p11_rsa_verify_pss(key, CKM_SHA256, 32, h, 32, sig[3]));
}

/* A signature whose private computation went wrong (a fault: here bits
 * flipped in the stored key) never leaves, on either path: the
 * public-key check after the root refuses it, for PKCS#1 v1.5 with a
 * hash, raw CKM_RSA_PKCS and PSS. The unflipped key signs, the control.
 * Nettle's root uses the CRT values alone: a flipped bit in dp is
 * refused there. OpenSSL checks its CRT result itself and, if wrong,
 * computes m^d mod n instead: with dp alone flipped it signs, and
 * correctly (the unflipped key's PKCS#1 v1.5 signatures, byte for byte);
 * with d flipped too its result is wrong, and the token refuses it. */
static void test_rsa_sign_faulted(void **state)
{
	br_hmac_drbg_context drbg;
	seed(NULL, &drbg);
	static uint8_t buf[P11_RSA_BUF], bad_dp[P11_RSA_BUF], bad_both[P11_RSA_BUF];
	static uint8_t good[4][P11_RSA_BYTES_MAX], sig[4][P11_RSA_BYTES_MAX];
	struct p11_rsa_key k, dp, both;
	assert_true(p11_rsa_keygen(&drbg, 2048, buf, &k));
	faulted_key(&k, buf, bad_dp, &dp, P11_RSA_DP, -1);
	faulted_key(&k, buf, bad_both, &both, P11_RSA_DP, P11_RSA_D);
	for (int portable = 0; portable < 2; portable++) {
		p11_ossl_force_portable(portable);
		assert_int_equal(p11_ossl_ready(), !portable);
		sign_four(&k, &drbg, true, good);
		sign_four(&both, &drbg, false, sig);
		sign_four(&dp, &drbg, !portable, sig);
		if (!portable)
			assert_memory_equal(sig, good, 3 * sizeof sig[0]);
	}
}

/* The two paths give the same PKCS#1 v1.5 signatures, byte for byte
 * (deterministic), and PSS with no salt too; PSS with a salt verifies on
 * both. Of 2048- and 3072-bit keys; every hash Nettle encodes. */
static void test_rsa_sign_paths(void **state)
{
	br_hmac_drbg_context drbg;
	seed(NULL, &drbg);
	static uint8_t buf[P11_RSA_BUF], sig[2][P11_RSA_BYTES_MAX];
	static const uint8_t h[64] = { 9, 8, 7 };
	static const CK_MECHANISM_TYPE hashes[] = { CKM_SHA_1, CKM_SHA256, CKM_SHA384, CKM_SHA512 };
	for (unsigned bits = 2048; bits <= 3072; bits += 1024) {
		struct p11_rsa_key k;
		assert_true(p11_rsa_keygen(&drbg, bits, buf, &k));
		size_t len = bits / 8;
		for (size_t i = 0; i < sizeof hashes / sizeof hashes[0]; i++) {
			size_t hlen = p11_rsa_hash_len(hashes[i]);
			for (int portable = 0; portable < 2; portable++) {
				p11_ossl_force_portable(portable);
				assert_true(p11_rsa_sign_pkcs1(&k, &drbg, hashes[i], h, hlen, sig[portable]));
				assert_true(p11_rsa_verify_pkcs1(&k, hashes[i], h, hlen, sig[portable]));
			}
			assert_memory_equal(sig[0], sig[1], len);
			for (int portable = 0; portable < 2; portable++) {
				p11_ossl_force_portable(portable);
				assert_true(p11_rsa_sign_pss(&k, &drbg, hashes[i], 0, h, hlen, sig[portable]));
				assert_true(p11_rsa_verify_pss(&k, hashes[i], 0, h, hlen, sig[portable]));
			}
			assert_memory_equal(sig[0], sig[1], len);
			for (int portable = 0; portable < 2; portable++) {
				p11_ossl_force_portable(portable);
				assert_true(p11_rsa_sign_pss(&k, &drbg, hashes[i], hlen, h, hlen, sig[portable]));
				assert_true(p11_rsa_verify_pss(&k, hashes[i], hlen, h, hlen, sig[portable]));
				sig[portable][len / 2] ^= 1; /* the control */
				assert_false(p11_rsa_verify_pss(&k, hashes[i], hlen, h, hlen, sig[portable]));
			}
		}
	}
}

/* The token's signature tests again on the portable path (Nettle). */
static int setup_nettle(void **state)
{
	p11_ossl_force_portable(true);
	return setup(state);
}

static int end_nettle(void **state)
{
	p11_ossl_force_portable(false);
	return 0;
}

static void test_rsa_sign(void **state)
{
	rsa_keygen(1024, CKR_KEY_SIZE_RANGE);
	rsa_keygen(2048, CKR_OK);
	EVP_PKEY *pk = rsa_pubkey(pub);
	rsa_sign_verify(pk, priv, CKM_RSA_PKCS, CKM_SHA256, -1, false);
	rsa_sign_verify(pk, priv, CKM_SHA256_RSA_PKCS, CKM_SHA256, -1, false);
	rsa_sign_verify(pk, priv, CKM_SHA256_RSA_PKCS, CKM_SHA256, -1, true);
	rsa_sign_verify(pk, priv, CKM_SHA384_RSA_PKCS, CKM_SHA384, -1, true);
	rsa_sign_verify(pk, priv, CKM_SHA512_RSA_PKCS, CKM_SHA512, -1, false);
	rsa_sign_verify(pk, priv, CKM_RSA_PKCS_PSS, CKM_SHA256, 32, false);
	rsa_sign_verify(pk, priv, CKM_RSA_PKCS_PSS, CKM_SHA_1, 20, false);
	rsa_sign_verify(pk, priv, CKM_SHA256_RSA_PKCS_PSS, CKM_SHA256, 32, true);
	rsa_sign_verify(pk, priv, CKM_SHA384_RSA_PKCS_PSS, CKM_SHA384, 0, false);
	rsa_sign_verify(pk, priv, CKM_SHA512_RSA_PKCS_PSS, CKM_SHA512, 64, true);
	/* The longest salt a 2048-bit key allows with SHA-256, and one more. */
	rsa_sign_verify(pk, priv, CKM_SHA256_RSA_PKCS_PSS, CKM_SHA256, 256 - 32 - 2, false);
	uint8_t sig[P11_RSA_BYTES_MAX];
	uint32_t len;
	CK_RSA_PKCS_PSS_PARAMS bad[] = {
		{ CKM_SHA256, CKG_MGF1_SHA256, 256 - 32 - 1 }, /* salt too long */
		{ CKM_SHA256, CKG_MGF1_SHA1, 32 },	       /* MGF1 of another hash */
		{ CKM_SHA384, CKG_MGF1_SHA384, 32 },	       /* not the mechanism's hash */
		{ CKM_MD5, CKG_MGF1_SHA256, 32 },	       /* not a hash we take */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(rsa_sign(priv, CKM_SHA256_RSA_PKCS_PSS, CKM_SHA256, &bad[i], sizeof bad[i], false,
					  sig, &len),
				 CKR_MECHANISM_PARAM_INVALID);
	assert_int_equal(rsa_sign(priv, CKM_SHA256_RSA_PKCS_PSS, CKM_SHA256, NULL, 0, false, sig, &len),
			 CKR_MECHANISM_PARAM_INVALID);
	/* 3072 and 4096 bits too (about 1.5 s of the test: primes are sought
	 * from a fixed seed, so always the same time). */
	for (CK_ULONG bits = 3072; bits <= 4096; bits += 1024) {
		rsa_keygen(bits, CKR_OK);
		EVP_PKEY *big = rsa_pubkey(pub);
		assert_int_equal(EVP_PKEY_get_bits(big), (int)bits);
		rsa_sign_verify(big, priv, CKM_SHA256_RSA_PKCS_PSS, CKM_SHA256, 32, false);
		rsa_sign_verify(big, priv, CKM_SHA384_RSA_PKCS, CKM_SHA384, -1, false);
		EVP_PKEY_free(big);
	}
	rsa_keygen(4104, CKR_KEY_SIZE_RANGE);
	/* An RSA mechanism with an EC key, and the other way round. */
	assert_int_equal(rsa_sign(pub, CKM_SHA256_RSA_PKCS, CKM_SHA256, NULL, 0, false, sig, &len),
			 CKR_KEY_TYPE_INCONSISTENT);
	EVP_PKEY_free(pk);
}

/* Private parts are sensitive; public ones readable; an import of the
 * same key (with its CRT values) signs as the generated one does; a
 * wrong CRT value or a short key is refused. */
static void test_rsa_attrs_import(void **state)
{
	rsa_keygen(2048, CKR_OK);
	CK_RV rv;
	uint32_t len;
	for (int i = P11_RSA_D; i < P11_RSA_PARTS; i++) {
		attr(priv, p11_rsa_attr[i], &len, &rv);
		assert_int_equal(rv, CKR_ATTRIBUTE_SENSITIVE);
	}
	attr(priv, CKA_MODULUS, &len, &rv);
	assert_int_equal(rv, CKR_OK);
	assert_int_equal(len, 256);
	const uint8_t *v = attr(pub, CKA_MODULUS_BITS, &len, &rv);
	assert_int_equal(rv, CKR_OK);
	CK_ULONG bits;
	memcpy(&bits, v, sizeof bits);
	assert_int_equal(bits, 2048);
	/* The parts, as a caller importing this key would have them. */
	const struct p11_object *k = p11_objects_get(&tok.objects, priv);
	uint8_t parts[P11_RSA_PARTS][P11_RSA_BYTES_MAX];
	CK_OBJECT_CLASS cls = CKO_PRIVATE_KEY;
	CK_KEY_TYPE kt = CKK_RSA;
	CK_BBOOL yes = 1;
	CK_ATTRIBUTE t[3 + P11_RSA_PARTS] = { { CKA_CLASS, &cls, sizeof cls }, { CKA_KEY_TYPE, &kt, sizeof kt },
					      { CKA_SIGN, &yes, 1 } };
	for (int i = 0; i < P11_RSA_PARTS; i++) {
		const uint8_t *p = p11_obj_attr(k, p11_rsa_attr[i], &len);
		assert_non_null(p);
		memcpy(parts[i], p, len);
		t[3 + i] = (CK_ATTRIBUTE){ p11_rsa_attr[i], parts[i], len };
	}
	EVP_PKEY *pk = rsa_pubkey(pub);
	begin_session(P11_OP_CREATE_OBJECT);
	p11_put_template(&w, t, 3 + P11_RSA_PARTS);
	assert_int_equal(send_req(), CKR_OK);
	uint64_t imported = wire_get_u64(&r);
	rsa_sign_verify(pk, imported, CKM_SHA256_RSA_PKCS_PSS, CKM_SHA256, 32, false);
	/* OpenSSL's object for the key is kept for its next signature... */
	assert_true(p11_ossl_rsa_kept());
	/* A wrong coefficient. */
	parts[P11_RSA_QINV][10] ^= 1;
	begin_session(P11_OP_CREATE_OBJECT);
	p11_put_template(&w, t, 3 + P11_RSA_PARTS);
	assert_int_equal(send_req(), CKR_ATTRIBUTE_VALUE_INVALID);
	/* The public key alone, and a 1024-bit one (too short). */
	cls = CKO_PUBLIC_KEY;
	begin_session(P11_OP_CREATE_OBJECT);
	p11_put_template(&w, t, 5);
	assert_int_equal(send_req(), CKR_OK);
	t[3].ulValueLen = 128;
	begin_session(P11_OP_CREATE_OBJECT);
	p11_put_template(&w, t, 5);
	assert_int_equal(send_req(), CKR_ATTRIBUTE_VALUE_INVALID);
	/* Destroyed: no copy of the private exponent is left in the token. */
	uint8_t d[64];
	memcpy(d, parts[P11_RSA_D] + 32, sizeof d);
	for (uint64_t h = priv; h; h = h == priv ? imported : 0) {
		assert_true(in_token(d, sizeof d));
		begin_session(P11_OP_DESTROY_OBJECT);
		wire_put_u64(&w, h);
		assert_int_equal(send_req(), CKR_OK);
	}
	assert_false(in_token(d, sizeof d));
	/* ...and goes, cleared, with the objects. */
	assert_false(p11_ossl_rsa_kept());
	EVP_PKEY_free(pk);
}

/* Encrypts msg to the token's public key with OpenSSL: OAEP (hash, MGF1
 * of the same hash, label) or, with hash 0, PKCS#1 v1.5. */
static size_t rsa_encrypt(EVP_PKEY *pk, CK_MECHANISM_TYPE hash, const char *label, const char *msg, uint8_t *ct)
{
	EVP_PKEY_CTX *pc = EVP_PKEY_CTX_new(pk, NULL);
	assert_int_equal(EVP_PKEY_encrypt_init(pc), 1);
	if (hash) {
		assert_int_equal(EVP_PKEY_CTX_set_rsa_padding(pc, RSA_PKCS1_OAEP_PADDING), 1);
		assert_int_equal(EVP_PKEY_CTX_set_rsa_oaep_md(pc, md_of(hash)), 1);
		assert_int_equal(EVP_PKEY_CTX_set_rsa_mgf1_md(pc, md_of(hash)), 1);
		if (label) /* OpenSSL takes the buffer */
			assert_int_equal(EVP_PKEY_CTX_set0_rsa_oaep_label(pc, OPENSSL_strdup(label), strlen(label)), 1);
	} else {
		assert_int_equal(EVP_PKEY_CTX_set_rsa_padding(pc, RSA_PKCS1_PADDING), 1);
	}
	size_t n = P11_RSA_BYTES_MAX;
	assert_int_equal(EVP_PKEY_encrypt(pc, ct, &n, (const uint8_t *)msg, strlen(msg)), 1);
	EVP_PKEY_CTX_free(pc);
	return n;
}

/* C_DecryptInit as the module sends it (OAEP's parameters flattened:
 * p11_wire.h); hash 0 is CKM_RSA_PKCS. */
static CK_RV decrypt_init(uint64_t key, CK_MECHANISM_TYPE hash, CK_RSA_PKCS_MGF_TYPE mgf, const char *label)
{
	uint8_t flat[24 + P11_OAEP_LABEL_MAX];
	struct wire_writer fw;
	wire_writer_init(&fw, flat, sizeof flat);
	if (hash) {
		wire_put_u64(&fw, hash);
		wire_put_u64(&fw, mgf);
		wire_put_u64(&fw, CKZ_DATA_SPECIFIED);
		if (label)
			wire_put_raw(&fw, label, strlen(label));
	}
	begin_session(P11_OP_DECRYPT_INIT);
	wire_put_u64(&w, hash ? CKM_RSA_PKCS_OAEP : CKM_RSA_PKCS);
	wire_put_string(&w, flat, fw.len);
	wire_put_u64(&w, key);
	return send_req();
}

static CK_RV decrypt(const uint8_t *in, size_t len, uint64_t room, uint8_t *pt, uint32_t *outlen)
{
	begin_session(P11_OP_DECRYPT);
	wire_put_u8(&w, 0);
	wire_put_u64(&w, room);
	wire_put_u64(&w, len);
	wire_put_string(&w, in, len);
	CK_RV rv = send_req();
	if (rv != CKR_OK && rv != CKR_BUFFER_TOO_SMALL)
		return rv;
	uint32_t got;
	*outlen = (uint32_t)get_result(pt, P11_RSA_BYTES_MAX, &got);
	assert_true(rv != CKR_OK || got == *outlen);
	return rv;
}

/* What OpenSSL encrypted to the token's key, the token decrypts: OAEP
 * with SHA-256, with SHA-1 and a label, PKCS#1 v1.5; a wrong label,
 * mismatched parameters and an EC key are refused. */
static void test_rsa_decrypt(void **state)
{
	uint64_t ec = priv;
	rsa_keygen(2048, CKR_OK);
	EVP_PKEY *pk = rsa_pubkey(pub);
	static const char msg[] = "a session key, say";
	uint8_t ct[P11_RSA_BYTES_MAX], pt[P11_RSA_BYTES_MAX];
	uint32_t len;
	struct {
		CK_MECHANISM_TYPE hash;
		const char *label;
	} cases[] = { { CKM_SHA256, NULL }, { CKM_SHA_1, "cloak" }, { CKM_SHA512, "x" }, { 0, NULL } };
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		size_t n = rsa_encrypt(pk, cases[i].hash, cases[i].label, msg, ct);
		assert_int_equal(decrypt_init(priv, cases[i].hash, p11_rsa_mgf1(cases[i].hash), cases[i].label),
				 CKR_OK);
		/* Too small a buffer gets the length and keeps the operation. */
		assert_int_equal(decrypt(ct, n, 4, pt, &len), CKR_BUFFER_TOO_SMALL);
		assert_int_equal(len, strlen(msg));
		assert_int_equal(decrypt(ct, n, sizeof pt, pt, &len), CKR_OK);
		assert_int_equal(len, strlen(msg));
		assert_memory_equal(pt, msg, len);
	}
	/* The control: another label does not decrypt. */
	size_t n = rsa_encrypt(pk, CKM_SHA256, "one", msg, ct);
	assert_int_equal(decrypt_init(priv, CKM_SHA256, CKG_MGF1_SHA256, "two"), CKR_OK);
	assert_int_equal(decrypt(ct, n, sizeof pt, pt, &len), CKR_ENCRYPTED_DATA_INVALID);
	assert_int_equal(decrypt(ct, n, sizeof pt, pt, &len), CKR_OPERATION_NOT_INITIALIZED);
	assert_int_equal(decrypt_init(priv, CKM_SHA256, CKG_MGF1_SHA1, NULL), CKR_MECHANISM_PARAM_INVALID);
	assert_int_equal(decrypt_init(priv, CKM_MD5, CKG_MGF1_SHA256, NULL), CKR_MECHANISM_PARAM_INVALID);
	assert_int_equal(decrypt_init(ec, CKM_SHA256, CKG_MGF1_SHA256, NULL), CKR_KEY_TYPE_INCONSISTENT);
	/* Not a whole block. */
	assert_int_equal(decrypt_init(priv, CKM_SHA256, CKG_MGF1_SHA256, NULL), CKR_OK);
	assert_int_equal(decrypt(ct, n - 1, sizeof pt, pt, &len), CKR_ENCRYPTED_DATA_LEN_RANGE);
	EVP_PKEY_free(pk);
}


/* ---- secret keys, AES, MACs, digests (checked against OpenSSL, which
 * the token never calls, and known answers) */

#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/hmac.h>
#include <openssl/x509.h>

static const CK_BBOOL yes_ = CK_TRUE, no_ = CK_FALSE;

/* A secret key imported with value v (len bytes), usable for everything
 * but unwrapping; extra attributes after. Its handle, or 0 with *rv. */
static uint64_t secret_key_with(CK_KEY_TYPE kt, const uint8_t *v, size_t len, const CK_ATTRIBUTE *extra,
				unsigned nextra, CK_RV *rv)
{
	CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
	CK_ATTRIBUTE t[16] = { { CKA_CLASS, &cls, sizeof cls }, { CKA_KEY_TYPE, &kt, sizeof kt },
			       { CKA_VALUE, (void *)v, len } };
	unsigned n = 3;
	for (unsigned i = 0; i < nextra; i++)
		t[n++] = extra[i];
	begin_session(P11_OP_CREATE_OBJECT);
	p11_put_template(&w, t, n);
	*rv = send_req();
	return *rv == CKR_OK ? wire_get_u64(&r) : 0;
}

static uint64_t secret_key(CK_KEY_TYPE kt, const uint8_t *v, size_t len)
{
	CK_RV rv;
	uint64_t h = secret_key_with(kt, v, len, NULL, 0, &rv);
	assert_int_equal(rv, CKR_OK);
	return h;
}

static CK_RV op_init(enum p11_op op, CK_MECHANISM_TYPE mech, const void *param, size_t plen, uint64_t key)
{
	begin_session(op);
	wire_put_u64(&w, mech);
	wire_put_string(&w, param, plen);
	if (op != P11_OP_DIGEST_INIT)
		wire_put_u64(&w, key);
	return send_req();
}

/* ENCRYPT or DECRYPT of a whole message (room: the caller's buffer). */
static CK_RV crypt_whole(enum p11_op op, const uint8_t *in, size_t len, uint64_t room, uint8_t *dst,
			 uint32_t *outlen)
{
	begin_session(op);
	wire_put_u8(&w, 0);
	wire_put_u64(&w, room);
	wire_put_u64(&w, len);
	wire_put_string(&w, in, len);
	CK_RV rv = send_req();
	if (rv != CKR_OK && rv != CKR_BUFFER_TOO_SMALL)
		return rv;
	uint32_t got;
	*outlen = (uint32_t)get_result(dst, P11_DATA_MAX + 64, &got);
	assert_true(rv != CKR_OK || got == *outlen);
	return rv;
}

/* An UPDATE (total: its length) or a FINAL (update false): its output
 * appended at dst + *at. */
static CK_RV crypt_part(enum p11_op op, bool update, const uint8_t *in, size_t len, uint8_t *dst, size_t *at)
{
	begin_session(op);
	wire_put_u8(&w, 0);
	wire_put_u64(&w, 1 << 20);
	if (update) {
		wire_put_u64(&w, len);
		wire_put_string(&w, in, len);
	}
	CK_RV rv = send_req();
	if (rv != CKR_OK)
		return rv;
	uint32_t got;
	get_result(dst + *at, P11_DATA_MAX + 64, &got);
	*at += got;
	return CKR_OK;
}

/* A message through the multi-part calls in pieces of step bytes; the
 * whole output in dst, its length returned (or ~0 with *rv). */
static size_t crypt_multi(bool encrypt, const uint8_t *in, size_t len, size_t step, uint8_t *dst, CK_RV *rv)
{
	enum p11_op up = encrypt ? P11_OP_ENCRYPT_UPDATE : P11_OP_DECRYPT_UPDATE;
	enum p11_op fin = encrypt ? P11_OP_ENCRYPT_FINAL : P11_OP_DECRYPT_FINAL;
	size_t at = 0;
	for (size_t off = 0; off < len; off += step)
		if ((*rv = crypt_part(up, true, in + off, len - off < step ? len - off : step, dst, &at)) != CKR_OK)
			return ~(size_t)0;
	/* A FINAL may come in pieces (a GCM decryption longer than a frame). */
	for (;;) {
		size_t before = at;
		begin_session(fin);
		wire_put_u8(&w, 0);
		wire_put_u64(&w, 1 << 20);
		if ((*rv = send_req()) != CKR_OK)
			return ~(size_t)0;
		uint64_t total = wire_get_u64(&r);
		struct wire_bytes v = p11_get_bytes(&r, P11_BODY_MAX);
		assert_true(wire_done(&r));
		memcpy(dst + at, v.p, v.len);
		at += v.len;
		if (at - before == total)
			return at;
	}
}

/* OpenSSL's AES in the mode mech (CTR with a 128-bit counter, GCM with
 * its tag appended). */
static size_t ossl_aes(bool enc, CK_MECHANISM_TYPE mech, const uint8_t *key, size_t klen, const uint8_t *iv,
		       size_t ivlen, const uint8_t *aad, size_t aadlen, size_t taglen, const uint8_t *in,
		       size_t len, uint8_t *dst)
{
	const EVP_CIPHER *c;
	switch (mech) {
	case CKM_AES_ECB: c = klen == 16 ? EVP_aes_128_ecb() : klen == 24 ? EVP_aes_192_ecb() : EVP_aes_256_ecb(); break;
	case CKM_AES_CTR: c = klen == 16 ? EVP_aes_128_ctr() : klen == 24 ? EVP_aes_192_ctr() : EVP_aes_256_ctr(); break;
	case CKM_AES_GCM: c = klen == 16 ? EVP_aes_128_gcm() : klen == 24 ? EVP_aes_192_gcm() : EVP_aes_256_gcm(); break;
	default: c = klen == 16 ? EVP_aes_128_cbc() : klen == 24 ? EVP_aes_192_cbc() : EVP_aes_256_cbc(); break;
	}
	EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
	int n = 0, m = 0;
	assert_int_equal(EVP_CipherInit_ex(x, c, NULL, NULL, NULL, enc), 1);
	if (mech == CKM_AES_GCM)
		assert_int_equal(EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_SET_IVLEN, (int)ivlen, NULL), 1);
	assert_int_equal(EVP_CipherInit_ex(x, NULL, NULL, key, iv, enc), 1);
	EVP_CIPHER_CTX_set_padding(x, mech == CKM_AES_CBC_PAD);
	if (mech == CKM_AES_GCM) {
		if (aadlen)
			assert_int_equal(EVP_CipherUpdate(x, NULL, &n, aad, (int)aadlen), 1);
		if (!enc) {
			len -= taglen;
			assert_int_equal(EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_SET_TAG, (int)taglen, (void *)(in + len)), 1);
		}
	}
	assert_int_equal(EVP_CipherUpdate(x, dst, &n, in, (int)len), 1);
	int ok = EVP_CipherFinal_ex(x, dst + n, &m);
	if (!ok) {
		EVP_CIPHER_CTX_free(x);
		return ~(size_t)0;
	}
	if (mech == CKM_AES_GCM && enc)
		assert_int_equal(EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_GET_TAG, (int)taglen, dst + n + m), 1);
	EVP_CIPHER_CTX_free(x);
	return (size_t)(n + m) + (mech == CKM_AES_GCM && enc ? taglen : 0);
}

/* The GCM parameter as it travels (p11_aes.h). */
static size_t gcm_param(uint8_t *p, const uint8_t *iv, size_t ivlen, const uint8_t *aad, size_t aadlen,
			size_t tagbits)
{
	struct wire_writer pw;
	wire_writer_init(&pw, p, 4096);
	wire_put_u64(&pw, 8 * ivlen);
	wire_put_u64(&pw, tagbits);
	wire_put_string(&pw, iv, ivlen);
	wire_put_string(&pw, aad, aadlen);
	return pw.len;
}

static void fill_bytes(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 5));
}

/* FIPS-197's AES-128 example through the token (ECB), then every mode,
 * key size and a range of message lengths, single-part and in pieces of
 * several sizes, against OpenSSL, both ways. */
static void test_aes_modes(void **state)
{
	static const uint8_t k197[16] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
	static const uint8_t p197[16] = { 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
					  0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff };
	static const uint8_t c197[16] = { 0x69, 0xc4, 0xe0, 0xd8, 0x6a, 0x7b, 0x04, 0x30,
					  0xd8, 0xcd, 0xb7, 0x80, 0x70, 0xb4, 0xc5, 0x5a };
	static uint8_t in[3000], want[3100], got[3100], back[3100];
	uint32_t n;
	uint64_t key = secret_key(CKK_AES, k197, 16);
	assert_int_equal(op_init(P11_OP_ENCRYPT_INIT, CKM_AES_ECB, NULL, 0, key), CKR_OK);
	assert_int_equal(crypt_whole(P11_OP_ENCRYPT, p197, 16, 16, got, &n), CKR_OK);
	assert_int_equal(n, 16);
	assert_memory_equal(got, c197, 16);
	static const CK_MECHANISM_TYPE modes[] = { CKM_AES_ECB, CKM_AES_CBC, CKM_AES_CBC_PAD, CKM_AES_CTR,
						   CKM_AES_GCM };
	static const size_t lens[] = { 0, 1, 15, 16, 17, 33, 64, 1000, 2999 };
	static const size_t steps[] = { 1, 7, 16, 100 };
	for (unsigned ks = 16; ks <= 32; ks += 8) {
		uint8_t kv[32], iv[16], aad[20];
		fill_bytes(kv, ks, ks);
		fill_bytes(iv, sizeof iv, 3);
		fill_bytes(aad, sizeof aad, 5);
		key = secret_key(CKK_AES, kv, ks);
		for (size_t mi = 0; mi < sizeof modes / sizeof modes[0]; mi++) {
			CK_MECHANISM_TYPE mech = modes[mi];
			uint8_t param[256];
			size_t plen = 0, ivlen = 16;
			if (mech == CKM_AES_CBC || mech == CKM_AES_CBC_PAD) {
				memcpy(param, iv, 16), plen = 16;
			} else if (mech == CKM_AES_CTR) {
				CK_AES_CTR_PARAMS cp = { 128, { 0 } };
				memcpy(cp.cb, iv, 16);
				cp.cb[12] = cp.cb[13] = cp.cb[14] = 0xff; /* the low 32 bits wrap: a carry */
				memcpy(iv, cp.cb, 16);
				memcpy(param, &cp, sizeof cp), plen = sizeof cp;
			} else if (mech == CKM_AES_GCM) {
				ivlen = 12;
				plen = gcm_param(param, iv, ivlen, aad, sizeof aad, 128);
			}
			for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
				size_t len = lens[li];
				if ((mech == CKM_AES_ECB || mech == CKM_AES_CBC) && len % 16)
					continue;
				fill_bytes(in, len, (unsigned)(len + mi));
				size_t wl = ossl_aes(true, mech, kv, ks, mech == CKM_AES_ECB ? NULL : iv, ivlen, aad,
						     sizeof aad, 16, in, len, want);
				assert_int_equal(op_init(P11_OP_ENCRYPT_INIT, mech, param, plen, key), CKR_OK);
				assert_int_equal(crypt_whole(P11_OP_ENCRYPT, in, len, sizeof got, got, &n), CKR_OK);
				assert_int_equal(n, wl);
				assert_memory_equal(got, want, wl);
				assert_int_equal(op_init(P11_OP_DECRYPT_INIT, mech, param, plen, key), CKR_OK);
				assert_int_equal(crypt_whole(P11_OP_DECRYPT, want, wl, sizeof back, back, &n), CKR_OK);
				assert_int_equal(n, len);
				assert_memory_equal(back, in, len);
				for (size_t si = 0; si < sizeof steps / sizeof steps[0]; si++) {
					CK_RV rv;
					if (len > 1000 && steps[si] < 16)
						continue;
					assert_int_equal(op_init(P11_OP_ENCRYPT_INIT, mech, param, plen, key), CKR_OK);
					size_t m = crypt_multi(true, in, len, steps[si], got, &rv);
					assert_int_equal(rv, CKR_OK);
					assert_int_equal(m, wl);
					assert_memory_equal(got, want, wl);
					assert_int_equal(op_init(P11_OP_DECRYPT_INIT, mech, param, plen, key), CKR_OK);
					m = crypt_multi(false, want, wl, steps[si], back, &rv);
					assert_int_equal(rv, CKR_OK);
					assert_int_equal(m, len);
					assert_memory_equal(back, in, len);
				}
			}
		}
	}
}

/* Refusals: lengths, padding, tags, parameters, keys; a length query and
 * a buffer too small keep the operation. */
static void test_aes_errors(void **state)
{
	uint8_t kv[16] = { 1 }, iv[16] = { 2 }, buf[256], dst[512];
	uint32_t n;
	uint64_t key = secret_key(CKK_AES, kv, 16);
	assert_int_equal(op_init(P11_OP_ENCRYPT_INIT, CKM_AES_CBC, iv, 15, key), CKR_MECHANISM_PARAM_INVALID);
	assert_int_equal(op_init(P11_OP_ENCRYPT_INIT, CKM_AES_ECB, iv, 16, key), CKR_MECHANISM_PARAM_INVALID);
	assert_int_equal(op_init(P11_OP_ENCRYPT_INIT, CKM_AES_CBC, iv, 16, priv), CKR_KEY_TYPE_INCONSISTENT);
	assert_int_equal(op_init(P11_OP_ENCRYPT_INIT, CKM_DES3_CBC, iv, 16, key), CKR_MECHANISM_INVALID);
	/* Not whole blocks. */
	assert_int_equal(op_init(P11_OP_ENCRYPT_INIT, CKM_AES_CBC, iv, 16, key), CKR_OK);
	assert_int_equal(op_init(P11_OP_ENCRYPT_INIT, CKM_AES_CBC, iv, 16, key), CKR_OPERATION_ACTIVE);
	assert_int_equal(crypt_whole(P11_OP_ENCRYPT, buf, 17, sizeof dst, dst, &n), CKR_DATA_LEN_RANGE);
	assert_int_equal(op_init(P11_OP_ENCRYPT_INIT, CKM_AES_CBC, iv, 16, key), CKR_OK);
	size_t at = 0;
	assert_int_equal(crypt_part(P11_OP_ENCRYPT_UPDATE, true, buf, 17, dst, &at), CKR_OK);
	assert_int_equal(at, 16);
	assert_int_equal(crypt_part(P11_OP_ENCRYPT_FINAL, false, NULL, 0, dst, &at), CKR_DATA_LEN_RANGE);
	assert_int_equal(crypt_part(P11_OP_ENCRYPT_FINAL, false, NULL, 0, dst, &at), CKR_OPERATION_NOT_INITIALIZED);
	/* A buffer too small, then a length query, then the real thing. */
	assert_int_equal(op_init(P11_OP_ENCRYPT_INIT, CKM_AES_CBC_PAD, iv, 16, key), CKR_OK);
	assert_int_equal(crypt_whole(P11_OP_ENCRYPT, buf, 20, 31, dst, &n), CKR_BUFFER_TOO_SMALL);
	assert_int_equal(n, 32);
	assert_int_equal(crypt_whole(P11_OP_ENCRYPT, buf, 20, 32, dst, &n), CKR_OK);
	/* Padding that does not check (the last byte 0, then 17). */
	uint8_t bad[32];
	for (int v = 0; v < 2; v++) {
		uint8_t plain[32];
		memset(plain, v ? 17 : 0, sizeof plain);
		ossl_aes(true, CKM_AES_CBC, kv, 16, iv, 16, NULL, 0, 0, plain, 32, bad);
		assert_int_equal(op_init(P11_OP_DECRYPT_INIT, CKM_AES_CBC_PAD, iv, 16, key), CKR_OK);
		assert_int_equal(crypt_whole(P11_OP_DECRYPT, bad, 32, sizeof dst, dst, &n), CKR_ENCRYPTED_DATA_INVALID);
	}
	/* A GCM tag changed: nothing comes dst. */
	uint8_t param[128], aad[3] = { 9, 9, 9 };
	size_t plen = gcm_param(param, iv, 12, aad, 3, 96);
	assert_int_equal(op_init(P11_OP_ENCRYPT_INIT, CKM_AES_GCM, param, plen, key), CKR_OK);
	memset(buf, 'g', 100);
	assert_int_equal(crypt_whole(P11_OP_ENCRYPT, buf, 100, sizeof dst, dst, &n), CKR_OK);
	assert_int_equal(n, 112);
	dst[111] ^= 1;
	assert_int_equal(op_init(P11_OP_DECRYPT_INIT, CKM_AES_GCM, param, plen, key), CKR_OK);
	CK_RV rv;
	uint8_t back[256];
	assert_int_equal(crypt_multi(false, dst, 112, 50, back, &rv), ~(size_t)0);
	assert_int_equal(rv, CKR_ENCRYPTED_DATA_INVALID);
	assert_true(wire_done(&r)); /* the CK_RV alone */
	assert_int_equal(op_init(P11_OP_DECRYPT_INIT, CKM_AES_GCM, param, gcm_param(param, iv, 12, aad, 3, 90),
			     key),
			 CKR_MECHANISM_PARAM_INVALID);
	/* CTR: an 8-bit counter at 0xfe takes two blocks, not three. */
	CK_AES_CTR_PARAMS cp = { 8, { 0 } };
	cp.cb[15] = 0xfe;
	assert_int_equal(op_init(P11_OP_ENCRYPT_INIT, CKM_AES_CTR, &cp, sizeof cp, key), CKR_OK);
	at = 0;
	assert_int_equal(crypt_part(P11_OP_ENCRYPT_UPDATE, true, buf, 32, dst, &at), CKR_OK);
	assert_int_equal(crypt_part(P11_OP_ENCRYPT_UPDATE, true, buf, 1, dst, &at), CKR_DATA_LEN_RANGE);
	/* A key that may not encrypt. */
	CK_ATTRIBUTE noenc[] = { { CKA_ENCRYPT, (void *)&no_, 1 } };
	uint64_t k2 = secret_key_with(CKK_AES, kv, 16, noenc, 1, &rv);
	assert_int_equal(op_init(P11_OP_ENCRYPT_INIT, CKM_AES_ECB, NULL, 0, k2), CKR_KEY_FUNCTION_NOT_PERMITTED);
	/* A GCM decryption longer than a frame: its message comes dst in
	 * pieces once the tag checks. */
	static uint8_t big[3 * P11_DATA_MAX], bigct[3 * P11_DATA_MAX + 16], bigback[3 * P11_DATA_MAX + 16];
	fill_bytes(big, sizeof big, 77);
	plen = gcm_param(param, iv, 12, NULL, 0, 128);
	size_t wl = ossl_aes(true, CKM_AES_GCM, kv, 16, iv, 12, NULL, 0, 16, big, sizeof big, bigct);
	assert_int_equal(op_init(P11_OP_DECRYPT_INIT, CKM_AES_GCM, param, plen, key), CKR_OK);
	assert_int_equal(crypt_multi(false, bigct, wl, P11_DATA_MAX, bigback, &rv), sizeof big);
	assert_memory_equal(bigback, big, sizeof big);
}

/* ENCRYPT_INIT_ENCRYPT or DECRYPT_INIT_DECRYPT (op): the INIT part's
 * arguments (on the session), then the call's on session then (query:
 * a length query; room: the caller's buffer). Its CK_RV, r on the
 * results. */
static CK_RV init_crypt(enum p11_op op, CK_MECHANISM_TYPE mech, const void *param, size_t plen, uint64_t key,
			uint64_t then, bool query, uint64_t room, const uint8_t *in, size_t len)
{
	begin_session(op);
	wire_put_u64(&w, mech);
	wire_put_string(&w, param, plen);
	wire_put_u64(&w, key);
	wire_put_u64(&w, then);
	wire_put_u8(&w, query);
	wire_put_u64(&w, query ? 0 : room);
	wire_put_u64(&w, len);
	wire_put_string(&w, in, len);
	return send_req();
}

/* C_EncryptInit and C_Encrypt in one request, C_DecryptInit and
 * C_Decrypt in one: AES-GCM with a new IV each time, against OpenSSL,
 * and CBC_PAD. A refused INIT part answers alone and starts no
 * operation; a length query or a buffer too small keeps the one it
 * started; another session in the second part, or a body cut short
 * after the INIT part, is CKR_ARGUMENTS_BAD and ends it. */
static void test_crypt_init_crypt(void **state)
{
	uint8_t kv[32], iv[12], aad[13], msg[100], want[200], got[200], param[128];
	uint32_t n, len;
	fill_bytes(kv, sizeof kv, 9);
	fill_bytes(aad, sizeof aad, 11);
	fill_bytes(msg, sizeof msg, 13);
	uint64_t key = secret_key(CKK_AES, kv, sizeof kv);
	for (unsigned k = 0; k < 3; k++) {
		fill_bytes(iv, sizeof iv, 20 + k);
		size_t plen = gcm_param(param, iv, sizeof iv, aad, k * 5, 128);
		size_t wl = ossl_aes(true, CKM_AES_GCM, kv, sizeof kv, iv, sizeof iv, aad, k * 5, 16, msg, sizeof msg,
				     want);
		assert_int_equal(init_crypt(P11_OP_ENCRYPT_INIT_ENCRYPT, CKM_AES_GCM, param, plen, key, session, false,
					    sizeof got, msg, sizeof msg),
				 CKR_OK);
		assert_int_equal(get_result(got, sizeof got, &n), wl);
		assert_int_equal(n, wl);
		assert_memory_equal(got, want, wl);
		assert_int_equal(init_crypt(P11_OP_DECRYPT_INIT_DECRYPT, CKM_AES_GCM, param, plen, key, session, false,
					    sizeof got, want, wl),
				 CKR_OK);
		assert_int_equal(get_result(got, sizeof got, &n), sizeof msg);
		assert_memory_equal(got, msg, sizeof msg);
		/* Both operations are over. */
		assert_int_equal(crypt_whole(P11_OP_ENCRYPT, msg, 16, sizeof got, got, &len),
				 CKR_OPERATION_NOT_INITIALIZED);
		assert_int_equal(crypt_whole(P11_OP_DECRYPT, want, wl, sizeof got, got, &len),
				 CKR_OPERATION_NOT_INITIALIZED);
	}
	uint8_t cbc_iv[16] = { 5 };
	size_t wl = ossl_aes(true, CKM_AES_CBC_PAD, kv, sizeof kv, cbc_iv, 16, NULL, 0, 0, msg, 20, want);
	assert_int_equal(init_crypt(P11_OP_ENCRYPT_INIT_ENCRYPT, CKM_AES_CBC_PAD, cbc_iv, 16, key, session, false,
				    sizeof got, msg, 20),
			 CKR_OK);
	assert_int_equal(get_result(got, sizeof got, &n), wl);
	assert_memory_equal(got, want, wl);

	/* Refused INIT parts: the CK_RV alone, no operation. */
	CK_RV rv;
	CK_ATTRIBUTE noenc[] = { { CKA_ENCRYPT, (void *)&no_, 1 }, { CKA_DECRYPT, (void *)&no_, 1 } };
	uint64_t k2 = secret_key_with(CKK_AES, kv, 16, noenc, 2, &rv);
	assert_int_equal(rv, CKR_OK);
	size_t plen = gcm_param(param, iv, sizeof iv, NULL, 0, 128);
	static const enum p11_op both[] = { P11_OP_ENCRYPT_INIT_ENCRYPT, P11_OP_DECRYPT_INIT_DECRYPT };
	static const enum p11_op plain[] = { P11_OP_ENCRYPT, P11_OP_DECRYPT };
	for (unsigned d = 0; d < 2; d++) {
		assert_int_equal(init_crypt(both[d], CKM_AES_GCM, param, plen, k2, session, false, sizeof got, msg, 32),
				 CKR_KEY_FUNCTION_NOT_PERMITTED);
		assert_true(wire_done(&r));
		assert_int_equal(crypt_whole(plain[d], msg, 32, sizeof got, got, &len), CKR_OPERATION_NOT_INITIALIZED);
		assert_int_equal(init_crypt(both[d], CKM_AES_GCM, param, plen - 1, key, session, false, sizeof got,
					    msg, 32),
				 CKR_MECHANISM_PARAM_INVALID);
		assert_true(wire_done(&r));
		assert_int_equal(init_crypt(both[d], CKM_AES_GCM, param, plen, priv, session, false, sizeof got, msg,
					    32),
				 CKR_KEY_TYPE_INCONSISTENT);
		assert_int_equal(init_crypt(both[d], CKM_RSA_PKCS, NULL, 0, key + 1000, session, false, sizeof got,
					    msg, 32),
				 CKR_KEY_HANDLE_INVALID);
		assert_int_equal(crypt_whole(plain[d], msg, 32, sizeof got, got, &len), CKR_OPERATION_NOT_INITIALIZED);
	}
	/* A length query keeps the operation: the plain call after it ends
	 * it; so does a buffer too small. */
	assert_int_equal(init_crypt(P11_OP_ENCRYPT_INIT_ENCRYPT, CKM_AES_GCM, param, plen, key, session, true, 0,
				    msg, 32),
			 CKR_OK);
	assert_int_equal(get_result(got, sizeof got, &n), 48);
	assert_int_equal(n, 0);
	assert_int_equal(crypt_whole(P11_OP_ENCRYPT, msg, 32, sizeof got, got, &len), CKR_OK);
	assert_int_equal(len, 48);
	assert_int_equal(init_crypt(P11_OP_ENCRYPT_INIT_ENCRYPT, CKM_AES_GCM, param, plen, key, session, false, 47,
				    msg, 32),
			 CKR_BUFFER_TOO_SMALL);
	assert_int_equal(get_result(got, sizeof got, &n), 48);
	/* ... and an init while it is on is the token's CKR_OPERATION_ACTIVE,
	 * alone, the operation kept. */
	assert_int_equal(init_crypt(P11_OP_ENCRYPT_INIT_ENCRYPT, CKM_AES_GCM, param, plen, key, session, false,
				    sizeof got, msg, 32),
			 CKR_OPERATION_ACTIVE);
	assert_true(wire_done(&r));
	assert_int_equal(crypt_whole(P11_OP_ENCRYPT, msg, 32, sizeof got, got, &len), CKR_OK);
	/* Another session in the second part (another application's, none,
	 * this application's other one): CKR_ARGUMENTS_BAD, the operation
	 * the INIT part started ended. */
	uint64_t other = open_session(app1), theirs = open_session(app2);
	const uint64_t sessions[] = { other, theirs, 0, session + 1000 };
	for (unsigned i = 0; i < sizeof sessions / sizeof sessions[0]; i++) {
		assert_int_equal(init_crypt(P11_OP_ENCRYPT_INIT_ENCRYPT, CKM_AES_GCM, param, plen, key, sessions[i],
					    false, sizeof got, msg, 32),
				 CKR_ARGUMENTS_BAD);
		assert_int_equal(crypt_whole(P11_OP_ENCRYPT, msg, 32, sizeof got, got, &len),
				 CKR_OPERATION_NOT_INITIALIZED);
	}
	static const uint8_t h[32] = { 1 };
	begin(P11_OP_SIGN_INIT_SIGN, app1);
	put_sign_init(priv, CKM_ECDSA);
	wire_put_u64(&w, other);
	wire_put_u8(&w, 0);
	wire_put_u64(&w, 256);
	wire_put_string(&w, h, sizeof h);
	assert_int_equal(send_req(), CKR_ARGUMENTS_BAD);
	assert_int_equal(sign_plain(h, sizeof h), CKR_OPERATION_NOT_INITIALIZED);
	/* Cut short anywhere after the INIT part (in the second part's
	 * session handle, its flags, its data): CKR_ARGUMENTS_BAD, the
	 * operation ended. */
	uint8_t rest[8 + 1 + 8 + 8 + 4 + 32];
	struct wire_writer rw;
	wire_writer_init(&rw, rest, sizeof rest);
	wire_put_u64(&rw, session);
	wire_put_u8(&rw, 0);
	wire_put_u64(&rw, sizeof got);
	wire_put_u64(&rw, 32);
	wire_put_string(&rw, want, 32);
	assert_int_equal(rw.len, sizeof rest);
	for (size_t cut = 0; cut < sizeof rest; cut += 3) {
		begin_session(P11_OP_DECRYPT_INIT_DECRYPT);
		wire_put_u64(&w, CKM_AES_GCM);
		wire_put_string(&w, param, plen);
		wire_put_u64(&w, key);
		wire_put_raw(&w, rest, cut);
		assert_int_equal(send_req(), CKR_ARGUMENTS_BAD);
		assert_int_equal(crypt_whole(P11_OP_DECRYPT, want, 48, sizeof got, got, &len),
				 CKR_OPERATION_NOT_INITIALIZED);
	}
}

/* RFC 3394 4.1 and RFC 5649 6's examples, then wrap and unwrap against
 * OpenSSL's for every length up to 70 bytes and the three key sizes; a
 * changed byte does not unwrap. */
static void test_aes_key_wrap(void **state)
{
	static const uint8_t kek1[16] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
	static const uint8_t data1[16] = { 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
					   0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff };
	static const uint8_t want1[24] = { 0x1f, 0xa6, 0x8b, 0x0a, 0x81, 0x12, 0xb4, 0x47, 0xae, 0xf3, 0x4b, 0xd8,
					   0xfb, 0x5a, 0x7b, 0x82, 0x9d, 0x3e, 0x86, 0x23, 0x71, 0xd2, 0xcf, 0xe5 };
	static const uint8_t kek2[24] = { 0x58, 0x40, 0xdf, 0x6e, 0x29, 0xb0, 0x2a, 0xf1, 0xab, 0x49, 0x3b, 0x70,
					  0x5b, 0xf1, 0x6e, 0xa1, 0xae, 0x83, 0x38, 0xf4, 0xdc, 0xc1, 0x76, 0xa8 };
	static const uint8_t data2[20] = { 0xc3, 0x7b, 0x7e, 0x64, 0x92, 0x58, 0x43, 0x40, 0xbe, 0xd1,
					   0x22, 0x07, 0x80, 0x89, 0x41, 0x15, 0x50, 0x68, 0xf7, 0x38 };
	static const uint8_t want2[32] = { 0x13, 0x8b, 0xde, 0xaa, 0x9b, 0x8f, 0xa7, 0xfc, 0x61, 0xf9, 0x77,
					   0x42, 0xe7, 0x22, 0x48, 0xee, 0x5a, 0xe6, 0xae, 0x53, 0x60, 0xd1,
					   0xae, 0x6a, 0x5f, 0x54, 0xf3, 0x73, 0xfa, 0x54, 0x3b, 0x6a };
	static const uint8_t data3[7] = { 0x46, 0x6f, 0x72, 0x50, 0x61, 0x73, 0x69 };
	static const uint8_t want3[16] = { 0xaf, 0xbe, 0xb0, 0xf0, 0x7d, 0xfb, 0xf5, 0x41,
					   0x92, 0x00, 0xf2, 0xcc, 0xb5, 0x0b, 0xb2, 0x4f };
	uint8_t dst[128], back[128];
	size_t n;
	assert_int_equal(p11_aes_wrap(false, kek1, 16, data1, 16, dst), 24);
	assert_memory_equal(dst, want1, 24);
	assert_int_equal(p11_aes_wrap(true, kek2, 24, data2, 20, dst), 32);
	assert_memory_equal(dst, want2, 32);
	assert_true(p11_aes_unwrap(true, kek2, 24, want2, 32, back, &n));
	assert_int_equal(n, 20);
	assert_memory_equal(back, data2, 20);
	assert_int_equal(p11_aes_wrap(true, kek2, 24, data3, 7, dst), 16);
	assert_memory_equal(dst, want3, 16);
	assert_true(p11_aes_unwrap(true, kek2, 24, want3, 16, back, &n));
	assert_int_equal(n, 7);
	assert_memory_equal(back, data3, 7);
	for (unsigned ks = 16; ks <= 32; ks += 8) {
		uint8_t kek[32], in[72];
		fill_bytes(kek, ks, ks);
		for (size_t len = 1; len <= 70; len++) {
			fill_bytes(in, len, (unsigned)len);
			for (int pad = 0; pad < 2; pad++) {
				size_t wl = p11_aes_wrap(pad, kek, ks, in, len, dst);
				if (!pad && (len % 8 || len < 16)) {
					assert_int_equal(wl, 0);
					continue;
				}
				/* OpenSSL's, for the same input. */
				const EVP_CIPHER *c = pad ? (ks == 16 ? EVP_aes_128_wrap_pad() : ks == 24 ? EVP_aes_192_wrap_pad() : EVP_aes_256_wrap_pad())
							  : (ks == 16 ? EVP_aes_128_wrap() : ks == 24 ? EVP_aes_192_wrap() : EVP_aes_256_wrap());
				EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
				EVP_CIPHER_CTX_set_flags(x, EVP_CIPHER_CTX_FLAG_WRAP_ALLOW);
				uint8_t ref[128];
				int rl = 0, fl = 0;
				assert_int_equal(EVP_EncryptInit_ex(x, c, NULL, kek, NULL), 1);
				assert_int_equal(EVP_EncryptUpdate(x, ref, &rl, in, (int)len), 1);
				assert_int_equal(EVP_EncryptFinal_ex(x, ref + rl, &fl), 1);
				EVP_CIPHER_CTX_free(x);
				assert_int_equal(wl, (size_t)(rl + fl));
				assert_memory_equal(dst, ref, wl);
				assert_true(p11_aes_unwrap(pad, kek, ks, dst, wl, back, &n));
				assert_int_equal(n, len);
				assert_memory_equal(back, in, len);
				for (size_t i = 0; i < wl; i += 5) { /* the control: any byte changed */
					dst[i] ^= 0x10;
					assert_false(p11_aes_unwrap(pad, kek, ks, dst, wl, back, &n));
					dst[i] ^= 0x10;
				}
			}
		}
	}
}

/* A MAC or signature through SIGN (or the multi-part calls, steps > 0)
 * and checked by VERIFY; its bytes in sig. */
static CK_RV mac_sign(CK_MECHANISM_TYPE mech, uint64_t key, const uint8_t *msg, size_t len, size_t step,
		      uint8_t *sig, uint32_t *siglen)
{
	begin_session(P11_OP_SIGN_INIT);
	wire_put_u64(&w, mech);
	wire_put_string(&w, NULL, 0);
	wire_put_u64(&w, key);
	CK_RV rv = send_req();
	if (rv != CKR_OK)
		return rv;
	if (step) {
		for (size_t off = 0; off < len; off += step) {
			begin_session(P11_OP_SIGN_UPDATE);
			wire_put_string(&w, msg + off, len - off < step ? len - off : step);
			assert_int_equal(send_req(), CKR_OK);
		}
		begin_session(P11_OP_SIGN_FINAL);
		wire_put_u8(&w, 0);
		wire_put_u64(&w, 512);
	} else {
		begin_session(P11_OP_SIGN);
		wire_put_u8(&w, 0);
		wire_put_u64(&w, 512);
		wire_put_string(&w, msg, len);
	}
	if ((rv = send_req()) != CKR_OK)
		return rv;
	uint32_t got;
	*siglen = (uint32_t)get_result(sig, 512, &got);
	return CKR_OK;
}

static CK_RV verify_req(CK_MECHANISM_TYPE mech, const void *param, size_t plen, uint64_t key, const uint8_t *msg,
			size_t len, size_t step, const uint8_t *sig, size_t siglen)
{
	CK_RV rv = op_init(P11_OP_VERIFY_INIT, mech, param, plen, key);
	if (rv != CKR_OK)
		return rv;
	if (!step) {
		begin_session(P11_OP_VERIFY);
		wire_put_string(&w, msg, len);
		wire_put_string(&w, sig, siglen);
		return send_req();
	}
	for (size_t off = 0; off < len; off += step) {
		begin_session(P11_OP_VERIFY_UPDATE);
		wire_put_string(&w, msg + off, len - off < step ? len - off : step);
		assert_int_equal(send_req(), CKR_OK);
	}
	begin_session(P11_OP_VERIFY_FINAL);
	wire_put_string(&w, sig, siglen);
	return send_req();
}

/* HMAC with SHA-1 and SHA-2 and AES-CMAC against OpenSSL (and RFC 4231's
 * test case 6), single- and multi-part, verified by the token; a changed
 * MAC, a short one and a key too short refused. */
static void test_macs(void **state)
{
	static const struct {
		CK_MECHANISM_TYPE mech;
		const char *md;
		size_t len;
	} hmacs[] = { { CKM_SHA_1_HMAC, "SHA1", 20 }, { CKM_SHA256_HMAC, "SHA256", 32 },
		      { CKM_SHA384_HMAC, "SHA384", 48 }, { CKM_SHA512_HMAC, "SHA512", 64 } };
	/* RFC 4231 4.7: a 131-byte key of 0xaa. */
	static const char msg6[] = "Test Using Larger Than Block-Size Key - Hash Key First";
	static const uint8_t want6[32] = { 0x60, 0xe4, 0x31, 0x59, 0x1e, 0xe0, 0xb6, 0x7f, 0x0d, 0x8a, 0x26,
					   0xaa, 0xcb, 0xf5, 0xb7, 0x7f, 0x8e, 0x0b, 0xc6, 0x21, 0x37, 0x28,
					   0xc5, 0x14, 0x05, 0x46, 0x04, 0x0f, 0x0e, 0xe3, 0x7f, 0x54 };
	uint8_t kv[131], msg[300], sig[64], want[64];
	uint32_t n;
	memset(kv, 0xaa, sizeof kv);
	uint64_t k6 = secret_key(CKK_GENERIC_SECRET, kv, sizeof kv);
	assert_int_equal(mac_sign(CKM_SHA256_HMAC, k6, (const uint8_t *)msg6, strlen(msg6), 0, sig, &n), CKR_OK);
	assert_int_equal(n, 32);
	assert_memory_equal(sig, want6, 32);
	fill_bytes(msg, sizeof msg, 11);
	for (size_t i = 0; i < sizeof hmacs / sizeof hmacs[0]; i++) {
		for (size_t klen = hmacs[i].len; klen <= 131; klen += 37) {
			fill_bytes(kv, klen, (unsigned)klen);
			uint64_t key = secret_key(CKK_GENERIC_SECRET, kv, klen);
			unsigned wl = 0;
			HMAC(EVP_get_digestbyname(hmacs[i].md), kv, (int)klen, msg, sizeof msg, want, &wl);
			for (size_t step = 0; step <= 64; step += 32) {
				assert_int_equal(mac_sign(hmacs[i].mech, key, msg, sizeof msg, step, sig, &n), CKR_OK);
				assert_int_equal(n, wl);
				assert_memory_equal(sig, want, wl);
				assert_int_equal(verify_req(hmacs[i].mech, NULL, 0, key, msg, sizeof msg, step, sig, n), CKR_OK);
				sig[n - 1] ^= 1;
				assert_int_equal(verify_req(hmacs[i].mech, NULL, 0, key, msg, sizeof msg, step, sig, n),
						 CKR_SIGNATURE_INVALID);
				assert_int_equal(verify_req(hmacs[i].mech, NULL, 0, key, msg, sizeof msg, step, sig, n - 1),
						 CKR_SIGNATURE_LEN_RANGE);
			}
		}
		/* Shorter than the hash's output: SoftHSM2's bound. */
		uint64_t short_key = secret_key(CKK_GENERIC_SECRET, kv, hmacs[i].len - 1);
		assert_int_equal(mac_sign(hmacs[i].mech, short_key, msg, 1, 0, sig, &n), CKR_KEY_SIZE_RANGE);
	}
	/* The empty message, by the multi-part calls (SIGN_FINAL alone). */
	uint64_t k20 = secret_key(CKK_GENERIC_SECRET, kv, 20);
	unsigned wl = 0;
	HMAC(EVP_sha1(), kv, 20, NULL, 0, want, &wl);
	assert_int_equal(mac_sign(CKM_SHA_1_HMAC, k20, NULL, 0, 1, sig, &n), CKR_OK);
	assert_memory_equal(sig, want, 20);
	/* CMAC. */
	for (unsigned ks = 16; ks <= 32; ks += 8) {
		fill_bytes(kv, ks, ks + 1);
		uint64_t key = secret_key(CKK_AES, kv, ks);
		for (size_t len = 0; len <= 100; len += 25) {
			EVP_MAC *mac = EVP_MAC_fetch(NULL, "CMAC", NULL);
			EVP_MAC_CTX *mc = EVP_MAC_CTX_new(mac);
			const char *cipher = ks == 16 ? "AES-128-CBC" : ks == 24 ? "AES-192-CBC" : "AES-256-CBC";
			OSSL_PARAM ps[] = { OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_CIPHER, (char *)cipher, 0),
					    OSSL_PARAM_construct_end() };
			size_t ml = 0;
			assert_int_equal(EVP_MAC_init(mc, kv, ks, ps), 1);
			assert_int_equal(EVP_MAC_update(mc, msg, len), 1);
			assert_int_equal(EVP_MAC_final(mc, want, &ml, sizeof want), 1);
			EVP_MAC_CTX_free(mc);
			EVP_MAC_free(mac);
			assert_int_equal(mac_sign(CKM_AES_CMAC, key, msg, len, len % 2 ? 7 : 0, sig, &n), CKR_OK);
			assert_int_equal(n, 16);
			assert_memory_equal(sig, want, 16);
			assert_int_equal(verify_req(CKM_AES_CMAC, NULL, 0, key, msg, len, 9, sig, n), CKR_OK);
		}
	}
	/* A MAC mechanism with a key of another type. */
	assert_int_equal(mac_sign(CKM_SHA256_HMAC, priv, msg, 1, 0, sig, &n), CKR_KEY_TYPE_INCONSISTENT);
}

static CK_RV digest_req(enum p11_op op, const uint8_t *data, size_t len, uint8_t *dst, uint32_t *outlen)
{
	begin_session(op);
	wire_put_u8(&w, 0);
	wire_put_u64(&w, 64);
	if (op == P11_OP_DIGEST)
		wire_put_string(&w, data, len);
	CK_RV rv = send_req();
	if (rv == CKR_OK) {
		uint32_t got;
		*outlen = (uint32_t)get_result(dst, 64, &got);
	}
	return rv;
}

/* SHA-1 and SHA-2 against OpenSSL (and FIPS 180's "abc"), single- and
 * multi-part, with C_DigestKey of a secret key (its value's hash); a
 * private key is indigestible. */
static void test_digests(void **state)
{
	static const uint8_t abc256[32] = { 0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40,
					    0xde, 0x5d, 0xae, 0x22, 0x23, 0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17,
					    0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad };
	static const struct {
		CK_MECHANISM_TYPE mech;
		const char *md;
	} ds[] = { { CKM_SHA_1, "SHA1" }, { CKM_SHA256, "SHA256" }, { CKM_SHA384, "SHA384" }, { CKM_SHA512, "SHA512" } };
	uint8_t dst[64], want[64], msg[500], kv[32];
	uint32_t n;
	assert_int_equal(op_init(P11_OP_DIGEST_INIT, CKM_SHA256, NULL, 0, 0), CKR_OK);
	assert_int_equal(digest_req(P11_OP_DIGEST, (const uint8_t *)"abc", 3, dst, &n), CKR_OK);
	assert_memory_equal(dst, abc256, 32);
	fill_bytes(msg, sizeof msg, 4);
	fill_bytes(kv, sizeof kv, 8);
	uint64_t key = secret_key(CKK_AES, kv, sizeof kv);
	for (size_t i = 0; i < sizeof ds / sizeof ds[0]; i++) {
		unsigned wl;
		EVP_Digest(msg, sizeof msg, want, &wl, EVP_get_digestbyname(ds[i].md), NULL);
		assert_int_equal(op_init(P11_OP_DIGEST_INIT, ds[i].mech, NULL, 0, 0), CKR_OK);
		assert_int_equal(digest_req(P11_OP_DIGEST, msg, sizeof msg, dst, &n), CKR_OK);
		assert_int_equal(n, wl);
		assert_memory_equal(dst, want, wl);
		assert_int_equal(op_init(P11_OP_DIGEST_INIT, ds[i].mech, NULL, 0, 0), CKR_OK);
		for (size_t off = 0; off < sizeof msg; off += 99) {
			begin_session(P11_OP_DIGEST_UPDATE);
			wire_put_string(&w, msg + off, sizeof msg - off < 99 ? sizeof msg - off : 99);
			assert_int_equal(send_req(), CKR_OK);
		}
		assert_int_equal(digest_req(P11_OP_DIGEST_FINAL, NULL, 0, dst, &n), CKR_OK);
		assert_memory_equal(dst, want, wl);
		/* msg || key's value || msg */
		EVP_MD_CTX *x = EVP_MD_CTX_new();
		EVP_DigestInit_ex(x, EVP_get_digestbyname(ds[i].md), NULL);
		EVP_DigestUpdate(x, msg, 10);
		EVP_DigestUpdate(x, kv, sizeof kv);
		EVP_DigestUpdate(x, msg, 10);
		EVP_DigestFinal_ex(x, want, &wl);
		EVP_MD_CTX_free(x);
		assert_int_equal(op_init(P11_OP_DIGEST_INIT, ds[i].mech, NULL, 0, 0), CKR_OK);
		for (int part = 0; part < 3; part++) {
			begin_session(part == 1 ? P11_OP_DIGEST_KEY : P11_OP_DIGEST_UPDATE);
			if (part == 1)
				wire_put_u64(&w, key);
			else
				wire_put_string(&w, msg, 10);
			assert_int_equal(send_req(), CKR_OK);
		}
		assert_int_equal(digest_req(P11_OP_DIGEST_FINAL, NULL, 0, dst, &n), CKR_OK);
		assert_memory_equal(dst, want, wl);
	}
	assert_int_equal(op_init(P11_OP_DIGEST_INIT, CKM_SHA256, NULL, 0, 0), CKR_OK);
	begin_session(P11_OP_DIGEST_KEY);
	wire_put_u64(&w, priv);
	assert_int_equal(send_req(), CKR_KEY_INDIGESTIBLE);
	assert_int_equal(op_init(P11_OP_DIGEST_INIT, CKM_MD5, NULL, 0, 0), CKR_MECHANISM_INVALID);
}

/* A boolean attribute as the token reads it back (-1: refused). */
static int battr(uint64_t obj, uint64_t type)
{
	uint32_t len;
	CK_RV rv;
	const uint8_t *v = attr(obj, type, &len, &rv);
	return rv == CKR_OK && len == 1 ? v[0] : -1;
}

static CK_RV set_bool_attr(uint64_t obj, uint64_t type, bool v)
{
	CK_ATTRIBUTE t[] = { { type, (void *)(v ? &yes_ : &no_), 1 } };
	begin_session(P11_OP_SET_ATTRS);
	wire_put_u64(&w, obj);
	p11_put_template(&w, t, 1);
	return send_req();
}

static CK_RV generate_secret(CK_MECHANISM_TYPE mech, CK_ULONG len, const CK_ATTRIBUTE *extra, unsigned n,
			     uint64_t *key)
{
	CK_ATTRIBUTE t[12] = { { CKA_VALUE_LEN, &len, sizeof len } };
	for (unsigned i = 0; i < n; i++)
		t[1 + i] = extra[i];
	begin_session(P11_OP_GENERATE_KEY);
	wire_put_u64(&w, mech);
	wire_put_string(&w, NULL, 0);
	p11_put_template(&w, t, 1 + n);
	CK_RV rv = send_req();
	*key = rv == CKR_OK ? wire_get_u64(&r) : 0;
	return rv;
}

/* Secret keys made in the token and imported: their lengths, the
 * attributes the token sets, and the rules that latch: sensitive stays
 * sensitive, unextractable stays so, CKA_WRAP_WITH_TRUSTED stays on; an
 * extractable sensitive key always comes with it; only the SO sets
 * CKA_TRUSTED, and only on keys no one could read; no key both decrypts
 * and unwraps. */
static void test_secret_latching(void **state)
{
	uint64_t k, k2;
	uint32_t len;
	CK_RV rv;
	for (CK_ULONG l = 15; l <= 33; l++)
		assert_int_equal(generate_secret(CKM_AES_KEY_GEN, l, NULL, 0, &k),
				 l == 16 || l == 24 || l == 32 ? CKR_OK : CKR_ATTRIBUTE_VALUE_INVALID);
	assert_int_equal(generate_secret(CKM_GENERIC_SECRET_KEY_GEN, P11_SECRET_MAX + 1, NULL, 0, &k),
			 CKR_ATTRIBUTE_VALUE_INVALID);
	assert_int_equal(generate_secret(CKM_GENERIC_SECRET_KEY_GEN, 48, NULL, 0, &k), CKR_OK);
	const uint8_t *v = attr(k, CKA_VALUE_LEN, &len, &rv);
	assert_int_equal(rv, CKR_OK);
	CK_ULONG vl;
	memcpy(&vl, v, sizeof vl);
	assert_int_equal(vl, 48);
	attr(k, CKA_VALUE, &len, &rv);
	assert_int_equal(rv, CKR_ATTRIBUTE_SENSITIVE);
	assert_int_equal(battr(k, CKA_SENSITIVE), 1);
	assert_int_equal(battr(k, CKA_ALWAYS_SENSITIVE), 1);
	assert_int_equal(battr(k, CKA_NEVER_EXTRACTABLE), 1);
	assert_int_equal(battr(k, CKA_LOCAL), 1);
	/* Latching. */
	assert_int_equal(set_bool_attr(k, CKA_SENSITIVE, false), CKR_ATTRIBUTE_READ_ONLY);
	assert_int_equal(set_bool_attr(k, CKA_EXTRACTABLE, true), CKR_ATTRIBUTE_READ_ONLY);
	assert_int_equal(set_bool_attr(k, CKA_ALWAYS_SENSITIVE, false), CKR_ATTRIBUTE_READ_ONLY);
	assert_int_equal(set_bool_attr(k, CKA_LOCAL, false), CKR_ATTRIBUTE_READ_ONLY);
	assert_int_equal(set_bool_attr(k, CKA_TRUSTED, true), CKR_ATTRIBUTE_READ_ONLY); /* not the SO */
	assert_int_equal(set_bool_attr(k, CKA_WRAP_WITH_TRUSTED, true), CKR_OK);
	assert_int_equal(set_bool_attr(k, CKA_WRAP_WITH_TRUSTED, false), CKR_ATTRIBUTE_READ_ONLY);
	assert_int_equal(battr(k, CKA_SENSITIVE), 1);
	/* Extractable and sensitive: CKA_WRAP_WITH_TRUSTED comes with it,
	 * and it cannot be refused. */
	CK_ATTRIBUTE ex[] = { { CKA_EXTRACTABLE, (void *)&yes_, 1 }, { CKA_WRAP_WITH_TRUSTED, (void *)&no_, 1 } };
	assert_int_equal(generate_secret(CKM_AES_KEY_GEN, 32, ex, 1, &k), CKR_OK);
	assert_int_equal(battr(k, CKA_WRAP_WITH_TRUSTED), 1);
	assert_int_equal(battr(k, CKA_NEVER_EXTRACTABLE), 0);
	assert_int_equal(battr(k, CKA_ALWAYS_SENSITIVE), 1);
	assert_int_equal(generate_secret(CKM_AES_KEY_GEN, 32, ex, 2, &k2), CKR_ATTRIBUTE_VALUE_INVALID);
	assert_int_equal(set_bool_attr(k, CKA_EXTRACTABLE, false), CKR_OK);
	assert_int_equal(set_bool_attr(k, CKA_EXTRACTABLE, true), CKR_ATTRIBUTE_READ_ONLY);
	assert_int_equal(battr(k, CKA_NEVER_EXTRACTABLE), 0); /* it was extractable once */
	/* Imported: the value was outside; readable only when neither
	 * sensitive nor unextractable. */
	uint8_t kv[16] = { 7 };
	CK_ATTRIBUTE readable[] = { { CKA_SENSITIVE, (void *)&no_, 1 }, { CKA_EXTRACTABLE, (void *)&yes_, 1 } };
	k = secret_key_with(CKK_AES, kv, 16, readable, 2, &rv);
	assert_int_equal(rv, CKR_OK);
	v = attr(k, CKA_VALUE, &len, &rv);
	assert_int_equal(rv, CKR_OK);
	assert_memory_equal(v, kv, 16);
	assert_int_equal(battr(k, CKA_ALWAYS_SENSITIVE), 0);
	assert_int_equal(battr(k, CKA_LOCAL), 0);
	assert_int_equal(set_bool_attr(k, CKA_SENSITIVE, true), CKR_OK);
	attr(k, CKA_VALUE, &len, &rv);
	assert_int_equal(rv, CKR_ATTRIBUTE_SENSITIVE);
	assert_int_equal(set_bool_attr(k, CKA_SENSITIVE, false), CKR_ATTRIBUTE_READ_ONLY);
	k = secret_key_with(CKK_AES, kv, 16, readable, 1, &rv); /* not sensitive, not extractable */
	attr(k, CKA_VALUE, &len, &rv);
	assert_int_equal(rv, CKR_ATTRIBUTE_SENSITIVE);
	/* Lengths, and CKA_VALUE_LEN is the token's on an import. */
	secret_key_with(CKK_AES, kv, 15, NULL, 0, &rv);
	assert_int_equal(rv, CKR_ATTRIBUTE_VALUE_INVALID);
	CK_ULONG sixteen = 16;
	CK_ATTRIBUTE vlen[] = { { CKA_VALUE_LEN, &sixteen, sizeof sixteen } };
	secret_key_with(CKK_AES, kv, 16, vlen, 1, &rv);
	assert_int_equal(rv, CKR_TEMPLATE_INCONSISTENT);
	/* No key both decrypts and unwraps; unwrapping makes decrypting
	 * false by default. */
	CK_ATTRIBUTE both[] = { { CKA_UNWRAP, (void *)&yes_, 1 }, { CKA_DECRYPT, (void *)&yes_, 1 } };
	assert_int_equal(generate_secret(CKM_AES_KEY_GEN, 16, both, 2, &k), CKR_TEMPLATE_INCONSISTENT);
	assert_int_equal(generate_secret(CKM_AES_KEY_GEN, 16, both, 1, &k), CKR_OK);
	assert_int_equal(battr(k, CKA_DECRYPT), 0);
	assert_int_equal(set_bool_attr(k, CKA_DECRYPT, true), CKR_ATTRIBUTE_READ_ONLY);
	/* Nor one after the other: both turn off, never on, so a key made
	 * to unwrap never decrypts what was wrapped under it. */
	assert_int_equal(set_bool_attr(k, CKA_UNWRAP, false), CKR_OK);
	assert_int_equal(set_bool_attr(k, CKA_DECRYPT, true), CKR_ATTRIBUTE_READ_ONLY);
	assert_int_equal(set_bool_attr(k, CKA_UNWRAP, true), CKR_ATTRIBUTE_READ_ONLY);
	assert_int_equal(battr(k, CKA_DECRYPT), 0);
	assert_int_equal(generate_secret(CKM_AES_KEY_GEN, 16, NULL, 0, &k), CKR_OK);
	assert_int_equal(battr(k, CKA_DECRYPT), 1);
	assert_int_equal(set_bool_attr(k, CKA_UNWRAP, true), CKR_ATTRIBUTE_READ_ONLY);
	/* A private key: the same latches (the import of one that asks to
	 * be readable is test_private_value's). */
	assert_int_equal(set_bool_attr(priv, CKA_EXTRACTABLE, true), CKR_ATTRIBUTE_READ_ONLY);
	assert_int_equal(battr(priv, CKA_ALWAYS_SENSITIVE), 1);
	assert_int_equal(battr(priv, CKA_NEVER_EXTRACTABLE), 1);
	assert_int_equal(battr(priv, CKA_WRAP_WITH_TRUSTED), 0);
}

/* C_CopyObject: a copy signs as its original; it may be more private and
 * more sensitive, never less; CKA_COPYABLE false forbids it. And
 * C_GetObjectSize. */
static void test_copy_size(void **state)
{
	CK_ATTRIBUTE to_token[] = { { CKA_TOKEN, (void *)&yes_, 1 }, { CKA_LABEL, "copy", 4 } };
	begin_session(P11_OP_COPY_OBJECT);
	wire_put_u64(&w, priv);
	p11_put_template(&w, to_token, 2);
	assert_int_equal(send_req(), CKR_OK);
	uint64_t copy = wire_get_u64(&r);
	assert_int_not_equal(copy, priv);
	sign_verify(copy, pub, CKM_ECDSA_SHA256, false, false);
	assert_int_equal(battr(copy, CKA_ALWAYS_SENSITIVE), 1);
	CK_ATTRIBUTE less[][1] = { { { CKA_SENSITIVE, (void *)&no_, 1 } },
				   { { CKA_EXTRACTABLE, (void *)&yes_, 1 } },
				   { { CKA_PRIVATE, (void *)&no_, 1 } },
				   { { CKA_LOCAL, (void *)&no_, 1 } } };
	for (size_t i = 0; i < sizeof less / sizeof less[0]; i++) {
		begin_session(P11_OP_COPY_OBJECT);
		wire_put_u64(&w, priv);
		p11_put_template(&w, less[i], 1);
		assert_int_equal(send_req(), CKR_ATTRIBUTE_READ_ONLY);
	}
	CK_ATTRIBUTE nocopy[] = { { CKA_COPYABLE, (void *)&no_, 1 } };
	begin_session(P11_OP_SET_ATTRS);
	wire_put_u64(&w, copy);
	p11_put_template(&w, nocopy, 1);
	assert_int_equal(send_req(), CKR_OK);
	assert_int_equal(set_bool_attr(copy, CKA_COPYABLE, true), CKR_ATTRIBUTE_READ_ONLY);
	begin_session(P11_OP_COPY_OBJECT);
	wire_put_u64(&w, copy);
	p11_put_template(&w, NULL, 0);
	assert_int_equal(send_req(), CKR_ACTION_PROHIBITED);
	begin_session(P11_OP_OBJECT_SIZE);
	wire_put_u64(&w, copy);
	assert_int_equal(send_req(), CKR_OK);
	uint64_t size = wire_get_u64(&r);
	assert_true(size > 32 && size < P11_OBJ_DATA);
	begin_session(P11_OP_OBJECT_SIZE);
	wire_put_u64(&w, copy + 1000);
	assert_int_equal(send_req(), CKR_OBJECT_HANDLE_INVALID);
}

/* ECDSA and RSA verification by the token, of its own signatures:
 * single- and multi-part, a changed signature and a wrong length
 * refused, a private key refused for it. */
static void test_verify(void **state)
{
	static const uint8_t msg[] = "verified by the token";
	uint8_t sig[P11_RSA_BYTES_MAX], h[32];
	uint32_t n;
	for (int curve = 0; curve < 2; curve++) {
		if (curve)
			keygen(p384, sizeof p384);
		for (int m = 0; m < 2; m++) {
			CK_MECHANISM_TYPE mech = m ? CKM_ECDSA : curve ? CKM_ECDSA_SHA384 : CKM_ECDSA_SHA256;
			const uint8_t *data = msg;
			size_t len = sizeof msg;
			if (m) { /* raw ECDSA: a hash the caller made */
				br_sha256_context c;
				br_sha256_init(&c);
				br_sha256_update(&c, msg, sizeof msg);
				br_sha256_out(&c, h);
				data = h, len = sizeof h;
			}
			assert_int_equal(mac_sign(mech, priv, data, len, 0, sig, &n), CKR_OK);
			assert_int_equal(n, curve ? 96 : 64);
			assert_int_equal(verify_req(mech, NULL, 0, pub, data, len, 0, sig, n), CKR_OK);
			if (!m)
				assert_int_equal(verify_req(mech, NULL, 0, pub, data, len, 5, sig, n), CKR_OK);
			sig[7] ^= 1;
			assert_int_equal(verify_req(mech, NULL, 0, pub, data, len, 0, sig, n), CKR_SIGNATURE_INVALID);
			assert_int_equal(verify_req(mech, NULL, 0, pub, data, len, 0, sig, n - 1), CKR_SIGNATURE_LEN_RANGE);
			assert_int_equal(verify_req(mech, NULL, 0, priv, data, len, 0, sig, n), CKR_KEY_TYPE_INCONSISTENT);
		}
	}
	rsa_keygen(2048, CKR_OK);
	static const struct {
		CK_MECHANISM_TYPE mech, hash;
		int salt;
	} rs[] = { { CKM_RSA_PKCS, CKM_SHA256, -1 },	    { CKM_SHA256_RSA_PKCS, CKM_SHA256, -1 },
		   { CKM_SHA512_RSA_PKCS, CKM_SHA512, -1 }, { CKM_RSA_PKCS_PSS, CKM_SHA256, 32 },
		   { CKM_SHA384_RSA_PKCS_PSS, CKM_SHA384, 48 } };
	for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++) {
		CK_RSA_PKCS_PSS_PARAMS pp = { rs[i].hash, p11_rsa_mgf1(rs[i].hash), (CK_ULONG)rs[i].salt };
		const void *param = rs[i].salt >= 0 ? &pp : NULL;
		size_t plen = rs[i].salt >= 0 ? sizeof pp : 0;
		assert_int_equal(rsa_sign(priv, rs[i].mech, rs[i].hash, param, plen, false, sig, &n), CKR_OK);
		/* What rsa_sign signed: the message, its hash or its DigestInfo. */
		uint8_t in[19 + 64];
		unsigned hl;
		EVP_Digest(rsa_msg, sizeof rsa_msg, in + 19, &hl, md_of(rs[i].hash), NULL);
		const uint8_t *data = (const uint8_t *)rsa_msg;
		size_t dlen = sizeof rsa_msg;
		if (rs[i].mech == CKM_RSA_PKCS) {
			static const uint8_t prefix[19] = { 0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01,
							    0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20 };
			memcpy(in, prefix, sizeof prefix);
			data = in, dlen = 19 + hl;
		} else if (rs[i].mech == CKM_RSA_PKCS_PSS) {
			data = in + 19, dlen = hl;
		}
		assert_int_equal(verify_req(rs[i].mech, param, plen, pub, data, dlen, 0, sig, n), CKR_OK);
		if (data == (const uint8_t *)rsa_msg)
			assert_int_equal(verify_req(rs[i].mech, param, plen, pub, data, dlen, 3, sig, n), CKR_OK);
		sig[100] ^= 4;
		assert_int_equal(verify_req(rs[i].mech, param, plen, pub, data, dlen, 0, sig, n), CKR_SIGNATURE_INVALID);
	}
}

/* RSA encryption by the token to its public key: OpenSSL and the token
 * decrypt it (OAEP with SHA-256 and a label, OAEP with no parameter:
 * SHA-1, PKCS#1 v1.5); a message too long is refused. */
static void test_rsa_encrypt(void **state)
{
	rsa_keygen(2048, CKR_OK);
	CK_ATTRIBUTE enc[] = { { CKA_ENCRYPT, (void *)&yes_, 1 } };
	begin_session(P11_OP_SET_ATTRS);
	wire_put_u64(&w, pub);
	p11_put_template(&w, enc, 1);
	assert_int_equal(send_req(), CKR_OK);
	EVP_PKEY *sk = rsa_privkey(priv);
	static const char msg[] = "a key to carry";
	uint8_t ct[P11_RSA_BYTES_MAX], pt[P11_RSA_BYTES_MAX], flat[64];
	uint32_t n;
	for (int k = 0; k < 3; k++) {
		struct wire_writer fw;
		wire_writer_init(&fw, flat, sizeof flat);
		if (k == 0) {
			wire_put_u64(&fw, CKM_SHA256);
			wire_put_u64(&fw, CKG_MGF1_SHA256);
			wire_put_u64(&fw, CKZ_DATA_SPECIFIED);
			wire_put_raw(&fw, "lbl", 3);
		}
		CK_MECHANISM_TYPE mech = k < 2 ? CKM_RSA_PKCS_OAEP : CKM_RSA_PKCS;
		assert_int_equal(op_init(P11_OP_ENCRYPT_INIT, mech, flat, fw.len, pub), CKR_OK);
		assert_int_equal(crypt_whole(P11_OP_ENCRYPT, (const uint8_t *)msg, strlen(msg), sizeof ct, ct, &n), CKR_OK);
		assert_int_equal(n, 256);
		/* OpenSSL decrypts it, with the private key read out of the
		 * token's state (only a test can), and so does the token. */
		EVP_PKEY_CTX *pc = EVP_PKEY_CTX_new(sk, NULL);
		assert_int_equal(EVP_PKEY_decrypt_init(pc), 1);
		if (mech == CKM_RSA_PKCS_OAEP) {
			assert_int_equal(EVP_PKEY_CTX_set_rsa_padding(pc, RSA_PKCS1_OAEP_PADDING), 1);
			assert_int_equal(EVP_PKEY_CTX_set_rsa_oaep_md(pc, k ? EVP_sha1() : EVP_sha256()), 1);
			assert_int_equal(EVP_PKEY_CTX_set_rsa_mgf1_md(pc, k ? EVP_sha1() : EVP_sha256()), 1);
			if (!k)
				assert_int_equal(EVP_PKEY_CTX_set0_rsa_oaep_label(pc, OPENSSL_strdup("lbl"), 3), 1);
		} else {
			assert_int_equal(EVP_PKEY_CTX_set_rsa_padding(pc, RSA_PKCS1_PADDING), 1);
		}
		size_t pl = sizeof pt;
		assert_int_equal(EVP_PKEY_decrypt(pc, pt, &pl, ct, n), 1);
		EVP_PKEY_CTX_free(pc);
		assert_int_equal(pl, strlen(msg));
		assert_memory_equal(pt, msg, pl);
		assert_int_equal(op_init(P11_OP_DECRYPT_INIT, mech, flat, fw.len, priv), CKR_OK);
		assert_int_equal(crypt_whole(P11_OP_DECRYPT, ct, n, sizeof pt, pt, &n), CKR_OK);
		assert_int_equal(n, strlen(msg));
		assert_memory_equal(pt, msg, n);
	}
	assert_int_equal(op_init(P11_OP_ENCRYPT_INIT, CKM_RSA_PKCS_OAEP, NULL, 0, pub), CKR_OK);
	uint8_t big[256] = { 0 };
	assert_int_equal(crypt_whole(P11_OP_ENCRYPT, big, 256 - 2 * 20 - 1, sizeof ct, ct, &n), CKR_DATA_LEN_RANGE);
	assert_int_equal(op_init(P11_OP_ENCRYPT_INIT, CKM_RSA_PKCS, NULL, 0, priv), CKR_KEY_TYPE_INCONSISTENT);
	EVP_PKEY_free(sk);
}

/* ---- wrapping, controlled export, the move between tokens, ECDH */

static void watch(const uint8_t *v, size_t len)
{
	watched[nwatched] = v;
	watched_len[nwatched++] = len;
}

/* A copy of an object's CKA_VALUE, read out of the current token's state
 * (only a test can). */
static size_t value_of(uint64_t obj, uint8_t *v)
{
	const struct p11_object *o = p11_objects_get(&cur->objects, obj);
	assert_non_null(o);
	uint32_t len;
	const uint8_t *p = p11_obj_attr(o, CKA_VALUE, &len);
	assert_non_null(p);
	memcpy(v, p, len);
	return len;
}

static CK_RV wrap_req(CK_MECHANISM_TYPE mech, const void *param, size_t plen, uint64_t wk, uint64_t key,
		      uint8_t *dst, uint32_t *len)
{
	begin_session(P11_OP_WRAP_KEY);
	wire_put_u64(&w, mech);
	wire_put_string(&w, param, plen);
	wire_put_u64(&w, wk);
	wire_put_u64(&w, key);
	wire_put_u8(&w, 0);
	wire_put_u64(&w, 4096);
	CK_RV rv = send_req();
	if (rv == CKR_OK) {
		uint32_t got;
		*len = (uint32_t)get_result(dst, 4096, &got);
	}
	return rv;
}

static CK_RV unwrap_req(CK_MECHANISM_TYPE mech, uint64_t uk, const uint8_t *wrapped, size_t len,
			const CK_ATTRIBUTE *t, unsigned n, uint64_t *key)
{
	begin_session(P11_OP_UNWRAP_KEY);
	wire_put_u64(&w, mech);
	wire_put_string(&w, NULL, 0);
	wire_put_u64(&w, uk);
	wire_put_string(&w, wrapped, len);
	p11_put_template(&w, t, n);
	CK_RV rv = send_req();
	*key = rv == CKR_OK ? wire_get_u64(&r) : 0;
	return rv;
}

/* The first block of zeros under AES key k, ECB: what tells two AES keys
 * apart without reading them. */
static void ecb_block(uint64_t k, uint8_t dst[16])
{
	static const uint8_t zero[16];
	uint32_t n;
	assert_int_equal(op_init(P11_OP_ENCRYPT_INIT, CKM_AES_ECB, NULL, 0, k), CKR_OK);
	assert_int_equal(crypt_whole(P11_OP_ENCRYPT, zero, 16, 16, dst, &n), CKR_OK);
}

/* Logs the current session's application in as the SO, or back as the
 * user. */
static void as_so(bool so)
{
	begin_session(P11_OP_LOGOUT);
	assert_int_equal(send_req(), CKR_OK);
	assert_int_equal(login(session, so ? CKU_SO : CKU_USER, so ? "87654321" : "123456"), CKR_OK);
}

/* Controlled export, and the move of a secret key and a private key
 * from token A to token B with standard calls only: B's unwrapping key
 * pair; A's SO imports its public key as trusted; A wraps an AES key under
 * it (RSA-OAEP), and a P-256 private key under a trusted AES key (RFC
 * 5649) that itself goes under B's key; B unwraps all three as sensitive.
 * No reply of either token holds a value in the clear; every refused
 * path is refused. */
static void test_wrap_move(void **state)
{
	uint8_t wa[4096], wb[4096], wc[4096], ea[16], eb[16];
	uint32_t la, lb, lc, len;
	CK_RV rv;
	uint64_t sa = session;
	/* B: an RSA pair whose private half unwraps (and so cannot decrypt). */
	init_token_on(&tokb);
	uint64_t sb = session;
	CK_ULONG bits = 2048;
	static const uint8_t f4[] = { 1, 0, 1 };
	CK_ATTRIBUTE bpt[] = { { CKA_MODULUS_BITS, &bits, sizeof bits }, { CKA_PUBLIC_EXPONENT, (void *)f4, 3 } };
	CK_ATTRIBUTE bkt[] = { { CKA_UNWRAP, (void *)&yes_, 1 }, { CKA_DECRYPT, (void *)&yes_, 1 } };
	assert_int_equal(gen_pair(CKM_RSA_PKCS_KEY_PAIR_GEN, bpt, bkt), CKR_TEMPLATE_INCONSISTENT);
	bkt[1].type = CKA_TOKEN;
	assert_int_equal(gen_pair(CKM_RSA_PKCS_KEY_PAIR_GEN, bpt, bkt), CKR_OK);
	uint64_t b_priv = priv;
	assert_int_equal(battr(b_priv, CKA_DECRYPT), 0);
	uint8_t n[P11_RSA_BYTES_MAX], e[8];
	uint32_t nlen, elen;
	const uint8_t *v = attr(pub, CKA_MODULUS, &nlen, &rv);
	memcpy(n, v, nlen);
	v = attr(pub, CKA_PUBLIC_EXPONENT, &elen, &rv);
	assert_true(elen <= sizeof e);
	memcpy(e, v, elen);
	/* A: its SO imports B's public key as trusted; a user may not. */
	cur = &tok;
	session = sa;
	CK_OBJECT_CLASS pubc = CKO_PUBLIC_KEY;
	CK_KEY_TYPE rsa = CKK_RSA;
	CK_ATTRIBUTE bpub[] = { { CKA_CLASS, &pubc, sizeof pubc },     { CKA_KEY_TYPE, &rsa, sizeof rsa },
				{ CKA_MODULUS, n, nlen },	       { CKA_PUBLIC_EXPONENT, e, elen },
				{ CKA_WRAP, (void *)&yes_, 1 },	       { CKA_TRUSTED, (void *)&yes_, 1 } };
	begin_session(P11_OP_CREATE_OBJECT);
	p11_put_template(&w, bpub, 6);
	assert_int_equal(send_req(), CKR_ATTRIBUTE_READ_ONLY);
	as_so(true);
	begin_session(P11_OP_CREATE_OBJECT);
	p11_put_template(&w, bpub, 6);
	assert_int_equal(send_req(), CKR_OK);
	uint64_t trusted = wire_get_u64(&r);
	/* The SO's transport key: made here, never readable, wraps only. */
	CK_ATTRIBUTE tt[] = { { CKA_PRIVATE, (void *)&no_, 1 },	   { CKA_TRUSTED, (void *)&yes_, 1 },
			      { CKA_WRAP, (void *)&yes_, 1 },	   { CKA_EXTRACTABLE, (void *)&yes_, 1 },
			      { CKA_ENCRYPT, (void *)&no_, 1 },	   { CKA_DECRYPT, (void *)&no_, 1 },
			      { CKA_SIGN, (void *)&no_, 1 },	   { CKA_VERIFY, (void *)&no_, 1 } };
	uint64_t transport;
	assert_int_equal(generate_secret(CKM_AES_KEY_GEN, 32, tt, 8, &transport), CKR_OK);
	/* Not even the SO may trust a key whose value could be known. */
	uint8_t known[16] = { 1 };
	CK_ATTRIBUTE kt[] = { { CKA_PRIVATE, (void *)&no_, 1 }, { CKA_TRUSTED, (void *)&yes_, 1 } };
	secret_key_with(CKK_AES, known, 16, kt, 2, &rv);
	assert_int_equal(rv, CKR_ATTRIBUTE_VALUE_INVALID);
	/* Nor one that decrypts: CKM_AES_ECB would undo its wrapping. */
	uint64_t decrypting;
	assert_int_equal(generate_secret(CKM_AES_KEY_GEN, 32, tt, 5, &decrypting), CKR_ATTRIBUTE_VALUE_INVALID);
	as_so(false);
	assert_int_equal(set_bool_attr(trusted, CKA_TRUSTED, false), CKR_ATTRIBUTE_READ_ONLY);
	/* A trusted key is the SO's: a user changes nothing of it. */
	assert_int_equal(set_bool_attr(trusted, CKA_WRAP, false), CKR_ATTRIBUTE_READ_ONLY);
	assert_int_equal(set_bool_attr(transport, CKA_ENCRYPT, false), CKR_ATTRIBUTE_READ_ONLY);
	/* A's user: an exportable AES key and an exportable P-256 key, and
	 * keys that may not leave. */
	CK_ATTRIBUTE ex[] = { { CKA_EXTRACTABLE, (void *)&yes_, 1 } };
	uint64_t x, stay, user_kek;
	assert_int_equal(generate_secret(CKM_AES_KEY_GEN, 32, ex, 1, &x), CKR_OK);
	assert_int_equal(generate_secret(CKM_AES_KEY_GEN, 32, NULL, 0, &stay), CKR_OK);
	CK_ATTRIBUTE kek[] = { { CKA_WRAP, (void *)&yes_, 1 } };
	assert_int_equal(generate_secret(CKM_AES_KEY_GEN, 32, kek, 1, &user_kek), CKR_OK);
	CK_BBOOL yes = 1;
	CK_ATTRIBUTE ept[] = { { CKA_EC_PARAMS, (void *)p256, sizeof p256 }, { CKA_TOKEN, &yes, 1 } };
	CK_ATTRIBUTE ekt[] = { { CKA_EXTRACTABLE, &yes, 1 }, { CKA_ID, "y", 1 } };
	assert_int_equal(gen_pair(CKM_EC_KEY_PAIR_GEN, ept, ekt), CKR_OK);
	uint64_t y = priv, ypub = pub;
	assert_int_equal(battr(y, CKA_WRAP_WITH_TRUSTED), 1);
	static uint8_t xv[32], tv[32], yv[32];
	value_of(x, xv), value_of(transport, tv), value_of(y, yv);
	watch(xv, 32), watch(tv, 32), watch(yv, 32);
	ecb_block(x, ea);
	/* Refused: not extractable; under a key the user made (or knows);
	 * a private key under RSA; the AES mechanisms under an RSA key. */
	assert_int_equal(wrap_req(CKM_RSA_PKCS_OAEP, NULL, 0, trusted, stay, wa, &la), CKR_KEY_UNEXTRACTABLE);
	assert_int_equal(wrap_req(CKM_AES_KEY_WRAP, NULL, 0, user_kek, x, wa, &la), CKR_KEY_NOT_WRAPPABLE);
	assert_int_equal(wrap_req(CKM_AES_KEY_WRAP_KWP, NULL, 0, user_kek, y, wa, &la), CKR_KEY_NOT_WRAPPABLE);
	assert_int_equal(wrap_req(CKM_RSA_PKCS_OAEP, NULL, 0, trusted, y, wa, &la), CKR_KEY_NOT_WRAPPABLE);
	assert_int_equal(wrap_req(CKM_AES_KEY_WRAP, NULL, 0, trusted, x, wa, &la), CKR_WRAPPING_KEY_TYPE_INCONSISTENT);
	assert_int_equal(wrap_req(CKM_RSA_PKCS, NULL, 0, trusted, x, wa, &la), CKR_MECHANISM_INVALID);
	/* Nor can a user make a key extractable later, or unwrap into a
	 * readable one. */
	assert_int_equal(set_bool_attr(stay, CKA_EXTRACTABLE, true), CKR_ATTRIBUTE_READ_ONLY);
	/* Allowed: x under B's key, y under the transport key, the
	 * transport key under B's key. */
	uint8_t flat[24]; /* OAEP's parameter as it travels: SHA-256, MGF1-SHA256, no label */
	struct wire_writer fw;
	wire_writer_init(&fw, flat, sizeof flat);
	wire_put_u64(&fw, CKM_SHA256);
	wire_put_u64(&fw, CKG_MGF1_SHA256);
	wire_put_u64(&fw, CKZ_DATA_SPECIFIED);
	assert_int_equal(wrap_req(CKM_RSA_PKCS_OAEP, flat, sizeof flat, trusted, x, wa, &la), CKR_OK);
	assert_int_equal(la, 256);
	assert_int_equal(wrap_req(CKM_AES_KEY_WRAP_KWP, NULL, 0, transport, y, wb, &lb), CKR_OK);
	assert_int_equal(wrap_req(CKM_RSA_PKCS_OAEP, flat, sizeof flat, trusted, transport, wc, &lc), CKR_OK);
	/* B unwraps: never as readable; as sensitive, yes. */
	cur = &tokb;
	session = sb;
	CK_OBJECT_CLASS sec = CKO_SECRET_KEY, prv = CKO_PRIVATE_KEY;
	CK_KEY_TYPE aes = CKK_AES;
	CK_ATTRIBUTE ut[] = { { CKA_CLASS, &sec, sizeof sec }, { CKA_KEY_TYPE, &aes, sizeof aes },
			      { CKA_ENCRYPT, (void *)&yes_, 1 }, { CKA_SENSITIVE, (void *)&no_, 1 } };
	uint64_t x2, t2, y2;
	begin_session(P11_OP_UNWRAP_KEY);
	wire_put_u64(&w, CKM_RSA_PKCS_OAEP);
	wire_put_string(&w, flat, sizeof flat);
	wire_put_u64(&w, b_priv);
	wire_put_string(&w, wa, la);
	p11_put_template(&w, ut, 4);
	assert_int_equal(send_req(), CKR_ATTRIBUTE_VALUE_INVALID);
	begin_session(P11_OP_UNWRAP_KEY);
	wire_put_u64(&w, CKM_RSA_PKCS_OAEP);
	wire_put_string(&w, flat, sizeof flat);
	wire_put_u64(&w, b_priv);
	wire_put_string(&w, wa, la);
	p11_put_template(&w, ut, 3);
	assert_int_equal(send_req(), CKR_OK);
	x2 = wire_get_u64(&r);
	ecb_block(x2, eb);
	assert_memory_equal(ea, eb, 16);
	attr(x2, CKA_VALUE, &len, &rv);
	assert_int_equal(rv, CKR_ATTRIBUTE_SENSITIVE);
	assert_int_equal(battr(x2, CKA_ALWAYS_SENSITIVE), 0);
	assert_int_equal(battr(x2, CKA_NEVER_EXTRACTABLE), 0);
	assert_int_equal(battr(x2, CKA_LOCAL), 0);
	/* The transport key, then the private key under it. */
	CK_ATTRIBUTE tu[] = { { CKA_CLASS, &sec, sizeof sec }, { CKA_KEY_TYPE, &aes, sizeof aes },
			      { CKA_UNWRAP, (void *)&yes_, 1 } };
	begin_session(P11_OP_UNWRAP_KEY);
	wire_put_u64(&w, CKM_RSA_PKCS_OAEP);
	wire_put_string(&w, flat, sizeof flat);
	wire_put_u64(&w, b_priv);
	wire_put_string(&w, wc, lc);
	p11_put_template(&w, tu, 3);
	assert_int_equal(send_req(), CKR_OK);
	t2 = wire_get_u64(&r);
	assert_int_equal(battr(t2, CKA_DECRYPT), 0); /* it unwraps: it does not decrypt */
	CK_ATTRIBUTE yu[] = { { CKA_CLASS, &prv, sizeof prv }, { CKA_SIGN, (void *)&yes_, 1 } };
	assert_int_equal(unwrap_req(CKM_AES_KEY_WRAP_KWP, t2, wb, lb, yu, 2, &y2), CKR_OK);
	wb[5] ^= 1; /* the control: a changed wrapping does not unwrap */
	assert_int_equal(unwrap_req(CKM_AES_KEY_WRAP_KWP, t2, wb, lb, yu, 2, &y2), CKR_WRAPPED_KEY_INVALID);
	wb[5] ^= 1;
	assert_int_equal(unwrap_req(CKM_AES_KEY_WRAP_KWP, t2, wb, lb, yu, 2, &y2), CKR_OK);
	attr(y2, CKA_VALUE, &len, &rv);
	assert_int_equal(rv, CKR_ATTRIBUTE_SENSITIVE);
	/* It signs on B; A's public key verifies it. */
	uint8_t sig[64];
	uint32_t sl;
	assert_int_equal(mac_sign(CKM_ECDSA_SHA256, y2, (const uint8_t *)"moved", 5, 0, sig, &sl), CKR_OK);
	/* B's unwrapping key cannot be made to decrypt (what it unwrapped
	 * would come out). */
	assert_int_equal(set_bool_attr(b_priv, CKA_DECRYPT, true), CKR_ATTRIBUTE_READ_ONLY);
	assert_int_equal(set_bool_attr(b_priv, CKA_UNWRAP, false), CKR_OK);
	assert_int_equal(set_bool_attr(b_priv, CKA_DECRYPT, true), CKR_ATTRIBUTE_READ_ONLY);
	cur = &tok;
	session = sa;
	assert_int_equal(verify_req(CKM_ECDSA_SHA256, NULL, 0, ypub, (const uint8_t *)"moved", 5, 0, sig, sl), CKR_OK);
	sig[3] ^= 1; /* the control */
	assert_int_equal(verify_req(CKM_ECDSA_SHA256, NULL, 0, ypub, (const uint8_t *)"moved", 5, 0, sig, sl),
			 CKR_SIGNATURE_INVALID);
}

/* ECDH with CKD_NULL on P-256 and P-384: the token's shared secret with
 * OpenSSL's key is OpenSSL's with the token's; CKA_VALUE_LEN takes its
 * last bytes; a point off the curve, another KDF and a key without
 * CKA_DERIVE are refused. */
static void test_ecdh(void **state)
{
	for (int c = 0; c < 2; c++) {
		if (c)
			keygen(p384, sizeof p384);
		assert_int_equal(set_bool_attr(priv, CKA_DERIVE, true), CKR_OK);
		EVP_PKEY *peer = EVP_EC_gen(c ? "P-384" : "P-256");
		assert_non_null(peer);
		uint8_t pt[128];
		unsigned char *enc = NULL;
		size_t ptlen = EVP_PKEY_get1_encoded_public_key(peer, &enc);
		memcpy(pt, enc, ptlen);
		OPENSSL_free(enc);
		/* OpenSSL's side: its key with the token's public point. */
		uint32_t plen;
		CK_RV rv;
		const uint8_t *tp = attr(pub, CKA_EC_POINT, &plen, &rv);
		EVP_PKEY *tokpub = EVP_PKEY_new();
		EVP_PKEY_copy_parameters(tokpub, peer);
		assert_int_equal(EVP_PKEY_set1_encoded_public_key(tokpub, tp + 2, plen - 2), 1);
		EVP_PKEY_CTX *dc = EVP_PKEY_CTX_new(peer, NULL);
		uint8_t z[64];
		size_t zlen = sizeof z;
		assert_int_equal(EVP_PKEY_derive_init(dc), 1);
		assert_int_equal(EVP_PKEY_derive_set_peer(dc, tokpub), 1);
		assert_int_equal(EVP_PKEY_derive(dc, z, &zlen), 1);
		EVP_PKEY_CTX_free(dc);
		/* The token's side, as systemd asks: a readable generic secret. */
		for (int v = 0; v < 4; v++) {
			uint8_t param[256];
			struct wire_writer pw;
			wire_writer_init(&pw, param, sizeof param);
			wire_put_u64(&pw, v == 2 ? CKD_SHA1_KDF : CKD_NULL);
			wire_put_string(&pw, NULL, 0);
			uint8_t bad[128];
			memcpy(bad, pt, ptlen);
			if (v == 3)
				bad[ptlen - 1] ^= 1; /* off the curve */
			if (v == 1) { /* the point in a DER OCTET STRING */
				uint8_t der[130] = { 0x04, (uint8_t)ptlen };
				memcpy(der + 2, pt, ptlen);
				wire_put_string(&pw, der, ptlen + 2);
			} else {
				wire_put_string(&pw, bad, ptlen);
			}
			CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
			CK_KEY_TYPE gk = CKK_GENERIC_SECRET;
			CK_ULONG sixteen = 16;
			CK_ATTRIBUTE t[] = { { CKA_CLASS, &cls, sizeof cls }, { CKA_KEY_TYPE, &gk, sizeof gk },
					     { CKA_SENSITIVE, (void *)&no_, 1 }, { CKA_EXTRACTABLE, (void *)&yes_, 1 },
					     { CKA_VALUE_LEN, &sixteen, sizeof sixteen } };
			begin_session(P11_OP_DERIVE_KEY);
			wire_put_u64(&w, c ? CKM_ECDH1_COFACTOR_DERIVE : CKM_ECDH1_DERIVE);
			wire_put_string(&w, param, pw.len);
			wire_put_u64(&w, priv);
			p11_put_template(&w, t, v == 1 ? 5 : 4);
			rv = send_req();
			if (v >= 2) {
				assert_int_equal(rv, CKR_MECHANISM_PARAM_INVALID);
				continue;
			}
			assert_int_equal(rv, CKR_OK);
			uint64_t k = wire_get_u64(&r);
			uint32_t klen;
			const uint8_t *kv = attr(k, CKA_VALUE, &klen, &rv);
			assert_int_equal(rv, CKR_OK);
			assert_int_equal(klen, v == 1 ? 16 : zlen);
			assert_memory_equal(kv, z + zlen - klen, klen);
			assert_int_equal(battr(k, CKA_ALWAYS_SENSITIVE), 0);
		}
		EVP_PKEY_free(tokpub);
		EVP_PKEY_free(peer);
	}
	/* A derived key, however sensitive, may not be trusted: the peer of
	 * the derivation knows its value. */
	{
		assert_int_equal(set_bool_attr(priv, CKA_DERIVE, true), CKR_OK);
		EVP_PKEY *peer = EVP_EC_gen("P-384");
		unsigned char *enc = NULL;
		size_t ptlen = EVP_PKEY_get1_encoded_public_key(peer, &enc);
		uint8_t param[256];
		struct wire_writer pw;
		wire_writer_init(&pw, param, sizeof param);
		wire_put_u64(&pw, CKD_NULL);
		wire_put_string(&pw, NULL, 0);
		wire_put_string(&pw, enc, ptlen);
		OPENSSL_free(enc);
		EVP_PKEY_free(peer);
		CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
		CK_KEY_TYPE ak = CKK_AES;
		CK_ULONG sixteen = 16;
		CK_ATTRIBUTE t[] = { { CKA_CLASS, &cls, sizeof cls },	 { CKA_KEY_TYPE, &ak, sizeof ak },
				     { CKA_VALUE_LEN, &sixteen, sizeof sixteen }, { CKA_PRIVATE, (void *)&no_, 1 },
				     { CKA_DECRYPT, (void *)&no_, 1 },	 { CKA_WRAP, (void *)&yes_, 1 } };
		begin_session(P11_OP_DERIVE_KEY);
		wire_put_u64(&w, CKM_ECDH1_COFACTOR_DERIVE);
		wire_put_string(&w, param, pw.len);
		wire_put_u64(&w, priv);
		p11_put_template(&w, t, 6);
		assert_int_equal(send_req(), CKR_OK);
		uint64_t dk = wire_get_u64(&r);
		assert_int_equal(battr(dk, CKA_ALWAYS_SENSITIVE), 1);
		assert_int_equal(battr(dk, CKA_LOCAL), 0);
		as_so(true);
		assert_int_equal(set_bool_attr(dk, CKA_TRUSTED, true), CKR_ATTRIBUTE_VALUE_INVALID);
		as_so(false);
	}
	/* A key that may not derive. */
	keygen(p256, sizeof p256);
	uint8_t param[100] = { 0 };
	param[7] = CKD_NULL;
	begin_session(P11_OP_DERIVE_KEY);
	wire_put_u64(&w, CKM_ECDH1_DERIVE);
	wire_put_string(&w, param, 16);
	wire_put_u64(&w, priv);
	p11_put_template(&w, NULL, 0);
	assert_int_equal(send_req(), CKR_KEY_FUNCTION_NOT_PERMITTED);
}

/* PKCS#8 both ways with OpenSSL: the token's wrapping of an RSA and an EC
 * key, unwrapped by OpenSSL (RFC 5649 with the known KEK), is OpenSSL's
 * key; OpenSSL's PKCS#8 of a key it made, wrapped under that KEK, unwraps
 * into the token and signs what OpenSSL verifies. */
static void test_pkcs8_openssl(void **state)
{
	as_so(true);
	CK_ATTRIBUTE tt[] = { { CKA_PRIVATE, (void *)&no_, 1 }, { CKA_TRUSTED, (void *)&yes_, 1 },
			      { CKA_WRAP, (void *)&yes_, 1 },	 { CKA_UNWRAP, (void *)&yes_, 1 } };
	uint64_t kek;
	assert_int_equal(generate_secret(CKM_AES_KEY_GEN, 32, tt, 4, &kek), CKR_OK);
	as_so(false);
	uint8_t kv[32], wrapped[4096], der[4096];
	value_of(kek, kv);
	CK_BBOOL yes = 1;
	static const uint8_t f4[] = { 1, 0, 1 };
	for (int k = 0; k < 2; k++) {
		if (k) {
			CK_ULONG bits = 2048;
			CK_ATTRIBUTE pt[] = { { CKA_MODULUS_BITS, &bits, sizeof bits }, { CKA_PUBLIC_EXPONENT, (void *)f4, 3 } };
			CK_ATTRIBUTE kt[] = { { CKA_EXTRACTABLE, &yes, 1 }, { CKA_SIGN, &yes, 1 } };
			assert_int_equal(gen_pair(CKM_RSA_PKCS_KEY_PAIR_GEN, pt, kt), CKR_OK);
		} else {
			CK_ATTRIBUTE pt[] = { { CKA_EC_PARAMS, (void *)p384, sizeof p384 }, { CKA_TOKEN, &yes, 1 } };
			CK_ATTRIBUTE kt[] = { { CKA_EXTRACTABLE, &yes, 1 }, { CKA_SIGN, &yes, 1 } };
			assert_int_equal(gen_pair(CKM_EC_KEY_PAIR_GEN, pt, kt), CKR_OK);
		}
		uint32_t wl;
		assert_int_equal(wrap_req(CKM_AES_KEY_WRAP_KWP, NULL, 0, kek, priv, wrapped, &wl), CKR_OK);
		size_t dl;
		assert_true(p11_aes_unwrap(true, kv, 32, wrapped, wl, der, &dl));
		const unsigned char *p = der;
		EVP_PKEY *sk = d2i_AutoPrivateKey(NULL, &p, (long)dl);
		assert_non_null(sk);
		assert_ptr_equal(p, der + dl);
		assert_int_equal(EVP_PKEY_get_base_id(sk), k ? EVP_PKEY_RSA : EVP_PKEY_EC);
		/* OpenSSL signs with what it unwrapped; the token's public key
		 * verifies. */
		static const char m[] = "signed from PKCS#8";
		uint8_t sig[512];
		size_t sl = sizeof sig;
		EVP_MD_CTX *mc = EVP_MD_CTX_new();
		assert_int_equal(EVP_DigestSignInit(mc, NULL, EVP_sha256(), NULL, sk), 1);
		assert_int_equal(EVP_DigestSign(mc, sig, &sl, (const uint8_t *)m, sizeof m), 1);
		EVP_MD_CTX_free(mc);
		if (!k) { /* DER to r || s */
			const unsigned char *sp = sig;
			ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &sp, (long)sl);
			uint8_t rs[96];
			BN_bn2binpad(ECDSA_SIG_get0_r(es), rs, 48);
			BN_bn2binpad(ECDSA_SIG_get0_s(es), rs + 48, 48);
			ECDSA_SIG_free(es);
			memcpy(sig, rs, sizeof rs);
			sl = sizeof rs;
		}
		assert_int_equal(verify_req(k ? CKM_SHA256_RSA_PKCS : CKM_ECDSA_SHA256, NULL, 0, pub, (const uint8_t *)m,
					    sizeof m, 0, sig, sl),
				 CKR_OK);
		/* OpenSSL's own PKCS#8 of a new key, into the token. */
		EVP_PKEY *mine = k ? EVP_RSA_gen(2048) : EVP_EC_gen("P-256");
		unsigned char *p8 = NULL;
		PKCS8_PRIV_KEY_INFO *info = EVP_PKEY2PKCS8(mine);
		int p8len = i2d_PKCS8_PRIV_KEY_INFO(info, &p8);
		PKCS8_PRIV_KEY_INFO_free(info);
		assert_true(p8len > 0);
		wl = (uint32_t)p11_aes_wrap(true, kv, 32, p8, (size_t)p8len, wrapped);
		OPENSSL_free(p8);
		CK_OBJECT_CLASS prv = CKO_PRIVATE_KEY;
		CK_ATTRIBUTE ut[] = { { CKA_CLASS, &prv, sizeof prv }, { CKA_SIGN, (void *)&yes_, 1 } };
		uint64_t in;
		assert_int_equal(unwrap_req(CKM_AES_KEY_WRAP_KWP, kek, wrapped, wl, ut, 2, &in), CKR_OK);
		uint8_t s2[512];
		uint32_t s2l;
		assert_int_equal(mac_sign(k ? CKM_SHA256_RSA_PKCS : CKM_ECDSA_SHA256, in, (const uint8_t *)m, sizeof m, 0,
					  s2, &s2l),
				 CKR_OK);
		unsigned char *dsig = NULL;
		size_t dsl = s2l;
		if (!k) { /* r || s to DER */
			ECDSA_SIG *es = ECDSA_SIG_new();
			ECDSA_SIG_set0(es, BN_bin2bn(s2, 32, NULL), BN_bin2bn(s2 + 32, 32, NULL));
			dsl = (size_t)i2d_ECDSA_SIG(es, &dsig);
			ECDSA_SIG_free(es);
		}
		mc = EVP_MD_CTX_new();
		assert_int_equal(EVP_DigestVerifyInit(mc, NULL, EVP_sha256(), NULL, mine), 1);
		assert_int_equal(EVP_DigestVerify(mc, dsig ? dsig : s2, dsl, (const uint8_t *)m, sizeof m), 1);
		EVP_MD_CTX_free(mc);
		OPENSSL_free(dsig);
		EVP_PKEY_free(mine);
		EVP_PKEY_free(sk);
	}
}

/* ---- Ed25519 */

static const uint8_t ed_oid[] = { 0x06, 0x03, 0x2b, 0x65, 0x70 };
static const uint8_t ed_name[] = { 0x13, 0x0c, 'e', 'd', 'w', 'a', 'r', 'd', 's', '2', '5', '5', '1', '9' };

/* An Ed25519 token key pair named by params (either form). */
static CK_RV ed_keygen(const uint8_t *params, size_t len)
{
	CK_ATTRIBUTE pt[] = { { CKA_EC_PARAMS, (void *)params, len }, { CKA_TOKEN, (void *)&yes_, 1 } };
	CK_ATTRIBUTE kt[] = { { CKA_TOKEN, (void *)&yes_, 1 }, { CKA_ID, "e", 1 } };
	return gen_pair(CKM_EC_EDWARDS_KEY_PAIR_GEN, pt, kt);
}

/* The 32-byte public key in key object obj's CKA_EC_POINT (a DER OCTET
 * STRING, as SoftHSM2 returns it). */
static void ed_point(uint64_t obj, uint8_t pk[32])
{
	uint32_t len;
	CK_RV rv;
	const uint8_t *v = attr(obj, CKA_EC_POINT, &len, &rv);
	assert_int_equal(rv, CKR_OK);
	assert_int_equal(len, 34);
	assert_int_equal(v[0], 0x04);
	assert_int_equal(v[1], 32);
	memcpy(pk, v + 2, 32);
}

/* OpenSSL's verdict (1: good) on an Ed25519 signature, which the token
 * never calls. */
static int ossl_ed_verify(const uint8_t pk[32], const uint8_t *msg, size_t len, const uint8_t sig[64])
{
	EVP_PKEY *k = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, pk, 32);
	EVP_MD_CTX *mc = EVP_MD_CTX_new();
	assert_non_null(k);
	assert_non_null(mc);
	assert_int_equal(EVP_DigestVerifyInit(mc, NULL, NULL, NULL, k), 1);
	int ok = EVP_DigestVerify(mc, sig, 64, msg, len);
	EVP_MD_CTX_free(mc);
	EVP_PKEY_free(k);
	return ok;
}

/* A signature by key priv of msg, checked by OpenSSL against key pub's
 * point (and a changed one not). */
static void ed_sign_checked(uint64_t key, uint64_t pubkey, const uint8_t *msg, size_t len)
{
	uint8_t sig[512], pk[32];
	uint32_t n;
	assert_int_equal(mac_sign(CKM_EDDSA, key, msg, len, 0, sig, &n), CKR_OK);
	assert_int_equal(n, 64);
	ed_point(pubkey, pk);
	assert_int_equal(ossl_ed_verify(pk, msg, len, sig), 1);
	sig[40] ^= 2; /* the control */
	assert_int_not_equal(ossl_ed_verify(pk, msg, len, sig), 1);
}

/* Key generation with CKA_EC_PARAMS as the OID and as "edwards25519":
 * the key type, the parameters as given, the public key's encoding, a
 * private key sensitive and never extractable whose value is unreadable,
 * signatures OpenSSL verifies; curves of the other mechanism refused. */
static void test_ed25519_keygen(void **state)
{
	static const uint8_t msg[] = "signed with Ed25519 by the token";
	for (int form = 0; form < 2; form++) {
		const uint8_t *params = form ? ed_name : ed_oid;
		size_t plen = form ? sizeof ed_name : sizeof ed_oid;
		assert_int_equal(ed_keygen(params, plen), CKR_OK);
		uint32_t len;
		CK_RV rv;
		for (int half = 0; half < 2; half++) {
			uint64_t o = half ? priv : pub;
			const uint8_t *v = attr(o, CKA_KEY_TYPE, &len, &rv);
			CK_KEY_TYPE kt;
			assert_int_equal(rv, CKR_OK);
			assert_int_equal(len, sizeof kt);
			memcpy(&kt, v, sizeof kt);
			assert_int_equal(kt, CKK_EC_EDWARDS);
			v = attr(o, CKA_EC_PARAMS, &len, &rv);
			assert_int_equal(rv, CKR_OK);
			assert_int_equal(len, plen);
			assert_memory_equal(v, params, plen);
		}
		uint8_t a[32], b[32];
		ed_point(pub, a);
		ed_point(priv, b);
		assert_memory_equal(a, b, 32);
		attr(priv, CKA_VALUE, &len, &rv);
		assert_int_equal(rv, CKR_ATTRIBUTE_SENSITIVE);
		assert_int_equal(battr(priv, CKA_SENSITIVE), 1);
		assert_int_equal(battr(priv, CKA_EXTRACTABLE), 0);
		assert_int_equal(battr(priv, CKA_ALWAYS_SENSITIVE), 1);
		assert_int_equal(battr(priv, CKA_NEVER_EXTRACTABLE), 1);
		assert_int_equal(battr(priv, CKA_LOCAL), 1);
		assert_int_equal(set_bool_attr(priv, CKA_SENSITIVE, false), CKR_ATTRIBUTE_READ_ONLY);
		ed_sign_checked(priv, pub, msg, sizeof msg);
		ed_sign_checked(priv, pub, NULL, 0); /* the empty message */
	}
	/* No curve, another curve, Ed25519 for the EC mechanism. */
	CK_ATTRIBUTE none[] = { { CKA_TOKEN, (void *)&yes_, 1 }, { CKA_ID, "e", 1 } };
	assert_int_equal(gen_pair(CKM_EC_EDWARDS_KEY_PAIR_GEN, none, none), CKR_TEMPLATE_INCOMPLETE);
	assert_int_equal(ed_keygen(p256, sizeof p256), CKR_CURVE_NOT_SUPPORTED);
	CK_ATTRIBUTE ed[] = { { CKA_EC_PARAMS, (void *)ed_oid, sizeof ed_oid }, { CKA_TOKEN, (void *)&yes_, 1 } };
	assert_int_equal(gen_pair(CKM_EC_KEY_PAIR_GEN, ed, none), CKR_CURVE_NOT_SUPPORTED);
	/* The mechanisms as C_GetMechanismInfo has them. */
	static const struct {
		CK_MECHANISM_TYPE m;
		CK_FLAGS f;
	} mi[] = { { CKM_EC_EDWARDS_KEY_PAIR_GEN, CKF_GENERATE_KEY_PAIR }, { CKM_EDDSA, CKF_SIGN | CKF_VERIFY } };
	for (size_t i = 0; i < 2; i++) {
		begin(P11_OP_MECH_INFO, app1);
		wire_put_u64(&w, mi[i].m);
		assert_int_equal(send_req(), CKR_OK);
		assert_int_equal(wire_get_u64(&r), 256);
		assert_int_equal(wire_get_u64(&r), 256);
		assert_int_equal(wire_get_u64(&r), mi[i].f);
	}
}

/* The token's verification: its own signature good, a changed one
 * CKR_SIGNATURE_INVALID, a short one CKR_SIGNATURE_LEN_RANGE; keys of
 * the wrong type, the multi-part calls and a parameter refused. */
static void test_ed25519_verify(void **state)
{
	static const uint8_t msg[] = "verified with Ed25519 by the token";
	uint64_t ecpub = pub, ecpriv = priv;
	assert_int_equal(ed_keygen(ed_oid, sizeof ed_oid), CKR_OK);
	uint8_t sig[512];
	uint32_t n;
	assert_int_equal(mac_sign(CKM_EDDSA, priv, msg, sizeof msg, 0, sig, &n), CKR_OK);
	assert_int_equal(n, 64);
	assert_int_equal(verify_req(CKM_EDDSA, NULL, 0, pub, msg, sizeof msg, 0, sig, n), CKR_OK);
	assert_int_equal(verify_req(CKM_EDDSA, NULL, 0, pub, msg, sizeof msg - 1, 0, sig, n), CKR_SIGNATURE_INVALID);
	for (size_t i = 0; i < 64; i += 21) {
		sig[i] ^= 0x10;
		assert_int_equal(verify_req(CKM_EDDSA, NULL, 0, pub, msg, sizeof msg, 0, sig, n), CKR_SIGNATURE_INVALID);
		sig[i] ^= 0x10;
	}
	assert_int_equal(verify_req(CKM_EDDSA, NULL, 0, pub, msg, sizeof msg, 0, sig, n - 1), CKR_SIGNATURE_LEN_RANGE);
	/* Wrong key types, either way; a private key to verify. */
	assert_int_equal(mac_sign(CKM_EDDSA, ecpriv, msg, sizeof msg, 0, sig, &n), CKR_KEY_TYPE_INCONSISTENT);
	assert_int_equal(verify_req(CKM_EDDSA, NULL, 0, ecpub, msg, sizeof msg, 0, sig, 64), CKR_KEY_TYPE_INCONSISTENT);
	assert_int_equal(mac_sign(CKM_ECDSA_SHA256, priv, msg, sizeof msg, 0, sig, &n), CKR_KEY_TYPE_INCONSISTENT);
	assert_int_equal(verify_req(CKM_EDDSA, NULL, 0, priv, msg, sizeof msg, 0, sig, 64), CKR_KEY_TYPE_INCONSISTENT);
	/* Single-part only, as SoftHSM2 has it: an update ends the operation. */
	assert_int_equal(op_init(P11_OP_SIGN_INIT, CKM_EDDSA, NULL, 0, priv), CKR_OK);
	begin_session(P11_OP_SIGN_UPDATE);
	wire_put_string(&w, msg, 4);
	assert_int_equal(send_req(), CKR_FUNCTION_NOT_SUPPORTED);
	assert_int_equal(sign_plain(msg, sizeof msg), CKR_OPERATION_NOT_INITIALIZED);
	/* No parameter: the module sends CK_EDDSA_PARAMS's pure form as
	 * none (p11_probe.py eddsa tests that). */
	assert_int_equal(op_init(P11_OP_SIGN_INIT, CKM_EDDSA, "x", 1, priv), CKR_MECHANISM_PARAM_INVALID);
	assert_int_equal(op_init(P11_OP_VERIFY_INIT, CKM_EDDSA, "x", 1, pub), CKR_MECHANISM_PARAM_INVALID);
}

/* RFC 8032 7.1, test 2: a private key imported by C_CreateObject (its
 * seed as CKA_VALUE) gives the RFC's public key and signature, and a
 * public key imported verifies it; malformed values refused. */
static void test_ed25519_rfc8032(void **state)
{
	static const uint8_t seed[32] = { 0x4c, 0xcd, 0x08, 0x9b, 0x28, 0xff, 0x96, 0xda, 0x9d, 0xb6, 0xc3,
					  0x46, 0xec, 0x11, 0x4e, 0x0f, 0x5b, 0x8a, 0x31, 0x9f, 0x35, 0xab,
					  0xa6, 0x24, 0xda, 0x8c, 0xf6, 0xed, 0x4f, 0xb8, 0xa6, 0xfb };
	static const uint8_t point[34] = { 0x04, 0x20, 0x3d, 0x40, 0x17, 0xc3, 0xe8, 0x43, 0x89, 0x5a, 0x92,
					   0xb7, 0x0a, 0xa7, 0x4d, 0x1b, 0x7e, 0xbc, 0x9c, 0x98, 0x2c, 0xcf,
					   0x2e, 0xc4, 0x96, 0x8c, 0xc0, 0xcd, 0x55, 0xf1, 0x2a, 0xf4, 0x66,
					   0x0c };
	static const uint8_t msg[1] = { 0x72 };
	static const uint8_t want[64] = {
		0x92, 0xa0, 0x09, 0xa9, 0xf0, 0xd4, 0xca, 0xb8, 0x72, 0x0e, 0x82, 0x0b, 0x5f, 0x64, 0x25, 0x40,
		0xa2, 0xb2, 0x7b, 0x54, 0x16, 0x50, 0x3f, 0x8f, 0xb3, 0x76, 0x22, 0x23, 0xeb, 0xdb, 0x69, 0xda,
		0x08, 0x5a, 0xc1, 0xe4, 0x3e, 0x15, 0x99, 0x6e, 0x45, 0x8f, 0x36, 0x13, 0xd0, 0xf1, 0x1d, 0x8c,
		0x38, 0x7b, 0x2e, 0xae, 0xb4, 0x30, 0x2a, 0xee, 0xb0, 0x0d, 0x29, 0x16, 0x12, 0xbb, 0x0c, 0x00,
	};
	CK_OBJECT_CLASS kcls = CKO_PRIVATE_KEY, pcls = CKO_PUBLIC_KEY;
	CK_KEY_TYPE kt = CKK_EC_EDWARDS;
	static const size_t vlens[] = { 31, 33, 32 }; /* the good one last: its handle */
	for (size_t i = 0; i < 3; i++) {
		size_t vlen = vlens[i];
		uint8_t v[33] = { 0 };
		memcpy(v, seed, 32);
		CK_ATTRIBUTE imp[] = { { CKA_CLASS, &kcls, sizeof kcls }, { CKA_KEY_TYPE, &kt, sizeof kt },
				       { CKA_EC_PARAMS, (void *)ed_name, sizeof ed_name }, { CKA_VALUE, v, vlen } };
		begin_session(P11_OP_CREATE_OBJECT);
		p11_put_template(&w, imp, 4);
		assert_int_equal(send_req(), vlen == 32 ? CKR_OK : CKR_ATTRIBUTE_VALUE_INVALID);
	}
	uint64_t key = wire_get_u64(&r);
	uint8_t pk[32], sig[512];
	uint32_t n, len;
	CK_RV rv;
	ed_point(key, pk);
	assert_memory_equal(pk, point + 2, 32);
	attr(key, CKA_VALUE, &len, &rv);
	assert_int_equal(rv, CKR_ATTRIBUTE_SENSITIVE);
	assert_int_equal(battr(key, CKA_LOCAL), 0);
	assert_int_equal(mac_sign(CKM_EDDSA, key, msg, sizeof msg, 0, sig, &n), CKR_OK);
	assert_int_equal(n, 64);
	assert_memory_equal(sig, want, 64);
	/* The public key: as an OCTET STRING only. */
	for (int raw = 1; raw >= 0; raw--) {
		CK_ATTRIBUTE imp[] = { { CKA_CLASS, &pcls, sizeof pcls }, { CKA_KEY_TYPE, &kt, sizeof kt },
				       { CKA_EC_PARAMS, (void *)ed_oid, sizeof ed_oid },
				       { CKA_EC_POINT, (void *)(point + 2 * raw), sizeof point - 2 * raw } };
		begin_session(P11_OP_CREATE_OBJECT);
		p11_put_template(&w, imp, 4);
		assert_int_equal(send_req(), raw ? CKR_ATTRIBUTE_VALUE_INVALID : CKR_OK);
	}
	uint64_t pubkey = wire_get_u64(&r);
	assert_int_equal(verify_req(CKM_EDDSA, NULL, 0, pubkey, msg, sizeof msg, 0, want, 64), CKR_OK);
	uint8_t bad[64];
	memcpy(bad, want, 64);
	bad[63] ^= 0x40;
	assert_int_equal(verify_req(CKM_EDDSA, NULL, 0, pubkey, msg, sizeof msg, 0, bad, 64), CKR_SIGNATURE_INVALID);
	/* Another curve's parameters for an Ed25519 key. */
	CK_ATTRIBUTE other[] = { { CKA_CLASS, &pcls, sizeof pcls }, { CKA_KEY_TYPE, &kt, sizeof kt },
				 { CKA_EC_PARAMS, (void *)p256, sizeof p256 }, { CKA_EC_POINT, (void *)point, sizeof point } };
	begin_session(P11_OP_CREATE_OBJECT);
	p11_put_template(&w, other, 4);
	assert_int_equal(send_req(), CKR_CURVE_NOT_SUPPORTED);
}

/* An Ed25519 token key pair kept in the objects' blob (what the store
 * keeps) and loaded again signs as before; a copy of it signs too, and
 * its seed is no more readable than the original's. */
static void test_ed25519_persist(void **state)
{
	static const uint8_t msg[] = "signed after a reload";
	static struct p11_objects copy;
	static uint8_t blob[P11_OBJECTS_MAX * (P11_OBJ_DATA + 2048)];
	assert_int_equal(ed_keygen(ed_name, sizeof ed_name), CKR_OK);
	uint8_t before[32], after[32];
	ed_point(pub, before);
	size_t n = p11_objects_save(&tok.objects, blob, sizeof blob);
	assert_true(n > 0);
	assert_true(p11_objects_load(&copy, blob, n));
	memset(&tok.objects, 0, sizeof tok.objects);
	assert_null(p11_objects_get(&tok.objects, priv));
	memcpy(&tok.objects, &copy, sizeof copy);
	ed_point(pub, after);
	assert_memory_equal(before, after, 32);
	ed_sign_checked(priv, pub, msg, sizeof msg);
	CK_ATTRIBUTE t[] = { { CKA_LABEL, "ed copy", 7 } };
	begin_session(P11_OP_COPY_OBJECT);
	wire_put_u64(&w, priv);
	p11_put_template(&w, t, 1);
	assert_int_equal(send_req(), CKR_OK);
	uint64_t dup = wire_get_u64(&r);
	ed_sign_checked(dup, pub, msg, sizeof msg);
	uint32_t len;
	CK_RV rv;
	attr(dup, CKA_VALUE, &len, &rv);
	assert_int_equal(rv, CKR_ATTRIBUTE_SENSITIVE);
}

/* ---- BearSSL's two kinds of AES and GHASH code: the CPU's (aes_x86ni,
 * ghash_pclmul) where this host has AES-NI and PCLMULQDQ, and the
 * portable aes_ct and ghash_ctmul64 (p11_aes_force_portable). */

/* Which the token picks: the CPU's where CPUID names AES-NI and SSE4.1
 * (BearSSL's aes_x86ni asks for both) and PCLMULQDQ, the portable code
 * when forced. */
static void test_aes_code(void **state)
{
	unsigned a = 0, b = 0, c = 0, d = 0;
	assert_true(__get_cpuid(1, &a, &b, &c, &d));
	bool ni = (c & bit_AES) && (c & bit_SSE4_1), pclmul = (c & bit_PCLMUL) != 0;
	const char *want = ni ? (pclmul ? "aes_x86ni, ghash_pclmul" : "aes_x86ni, ghash_ctmul64")
			      : (pclmul ? "aes_ct, ghash_pclmul" : "aes_ct, ghash_ctmul64");
	assert_string_equal(p11_aes_impl(), want);
	print_message("the token's AES on this host: %s\n", want);
	p11_aes_force_portable(true);
	assert_string_equal(p11_aes_impl(), "aes_ct, ghash_ctmul64");
	p11_aes_force_portable(false);
	assert_string_equal(p11_aes_impl(), want);
}

static size_t unhex(uint8_t *dst, const char *hex)
{
	size_t n = strlen(hex) / 2;
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
		dst[i] = (uint8_t)v;
	}
	return n;
}

/* A whole message through one operation (an update, then the final). */
static size_t aes_whole(CK_MECHANISM_TYPE mech, bool enc, const uint8_t *key, size_t klen, const uint8_t *param,
			size_t plen, const uint8_t *in, size_t len, uint8_t *dst, CK_RV *final_rv)
{
	struct p11_aes a;
	size_t n = 0, m = 0;
	bool more = false;
	assert_int_equal(p11_aes_init(&a, mech, enc, key, klen, param, plen), CKR_OK);
	assert_int_equal(p11_aes_update(&a, in, len, dst, &n), CKR_OK);
	*final_rv = p11_aes_final(&a, dst + n, 4096, &m, &more);
	assert_false(more);
	p11_aes_end(&a);
	return n + m;
}

/* The vector one way and back the other. */
static void aes_vector(CK_MECHANISM_TYPE mech, const char *key_hex, const uint8_t *param, size_t plen,
		       const char *plain_hex, const char *cipher_hex)
{
	uint8_t key[32], plain[128], cipher[160], got[160];
	size_t klen = unhex(key, key_hex), len = unhex(plain, plain_hex), clen = unhex(cipher, cipher_hex);
	CK_RV rv;
	assert_int_equal(aes_whole(mech, true, key, klen, param, plen, plain, len, got, &rv), clen);
	assert_int_equal(rv, CKR_OK);
	assert_memory_equal(got, cipher, clen);
	assert_int_equal(aes_whole(mech, false, key, klen, param, plen, cipher, clen, got, &rv), len);
	assert_int_equal(rv, CKR_OK);
	assert_memory_equal(got, plain, len);
	if (mech == CKM_AES_GCM) { /* a tag changed: refused, nothing out */
		cipher[clen - 1] ^= 1;
		assert_int_equal(aes_whole(mech, false, key, klen, param, plen, cipher, clen, got, &rv), 0);
		assert_int_equal(rv, CKR_ENCRYPTED_DATA_INVALID);
	}
}

#define SP800_38A_PLAIN                                                                  \
	"6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51"               \
	"30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710"
#define SP800_38A_K128 "2b7e151628aed2a6abf7158809cf4f3c"
#define SP800_38A_K256 "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4"
#define GCM_PLAIN                                                                        \
	"d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"               \
	"1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39"
#define GCM_K128 "feffe9928665731c6d6a8f9467308308"

/* Published vectors: NIST SP 800-38A F.1.1, F.2.1, F.2.5, F.5.1, F.5.5
 * (ECB, CBC, CTR), the GCM specification's test cases 4, 6 (a 60-byte IV)
 * and 16, RFC 4493's CMAC examples, RFC 3394 4.1's key wrap. */
static void aes_known_answers(void)
{
	uint8_t iv[16], param[256], aad[20], gcm_iv[60];
	unhex(iv, "000102030405060708090a0b0c0d0e0f");
	aes_vector(CKM_AES_ECB, SP800_38A_K128, NULL, 0, SP800_38A_PLAIN,
		   "3ad77bb40d7a3660a89ecaf32466ef97f5d3d58503b9699de785895a96fdbaaf"
		   "43b1cd7f598ece23881b00e3ed0306887b0c785e27e8ad3f8223207104725dd4");
	aes_vector(CKM_AES_CBC, SP800_38A_K128, iv, 16, SP800_38A_PLAIN,
		   "7649abac8119b246cee98e9b12e9197d5086cb9b507219ee95db113a917678b2"
		   "73bed6b8e3c1743b7116e69e222295163ff1caa1681fac09120eca307586e1a7");
	aes_vector(CKM_AES_CBC, SP800_38A_K256, iv, 16, SP800_38A_PLAIN,
		   "f58c4c04d6e5f1ba779eabfb5f7bfbd69cfc4e967edb808d679f777bc6702c7d"
		   "39f23369a9d9bacfa530e26304231461b2eb05e2c39be9fcda6c19078c6a9d1b");
	CK_AES_CTR_PARAMS cp = { 128, { 0 } };
	unhex(cp.cb, "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff");
	memcpy(param, &cp, sizeof cp);
	aes_vector(CKM_AES_CTR, SP800_38A_K128, param, sizeof cp, SP800_38A_PLAIN,
		   "874d6191b620e3261bef6864990db6ce9806f66b7970fdff8617187bb9fffdff"
		   "5ae4df3edbd5d35e5b4f09020db03eab1e031dda2fbe03d1792170a0f3009cee");
	aes_vector(CKM_AES_CTR, SP800_38A_K256, param, sizeof cp, SP800_38A_PLAIN,
		   "601ec313775789a5b7a7f504bbf3d228f443e3ca4d62b59aca84e990cacaf5c5"
		   "2b0930daa23de94ce87017ba2d84988ddfc9c58db67aada613c2dd08457941a6");
	unhex(aad, "feedfacedeadbeeffeedfacedeadbeefabaddad2");
	size_t ivlen = unhex(gcm_iv, "cafebabefacedbaddecaf888");
	size_t plen = gcm_param(param, gcm_iv, ivlen, aad, sizeof aad, 128);
	aes_vector(CKM_AES_GCM, GCM_K128, param, plen, GCM_PLAIN,
		   "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e"
		   "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091"
		   "5bc94fbc3221a5db94fae95ae7121a47");
	aes_vector(CKM_AES_GCM, GCM_K128 GCM_K128, param, plen, GCM_PLAIN,
		   "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
		   "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662"
		   "76fc6ece0f4e1768cddf8853bb2d551b");
	ivlen = unhex(gcm_iv, "9313225df88406e555909c5aff5269aa6a7a9538534f7da1e4c303d2a318a728"
			      "c3c0c95156809539fcf0e2429a6b525416aedbf5a0de6a57a637b39b");
	plen = gcm_param(param, gcm_iv, ivlen, aad, sizeof aad, 128);
	aes_vector(CKM_AES_GCM, GCM_K128, param, plen, GCM_PLAIN,
		   "8ce24998625615b603a033aca13fb894be9112a5c3a211a8ba262a3cca7e2ca7"
		   "01e4a9a4fba43c90ccdcb281d48c7c6fd62875d2aca417034c34aee5"
		   "619cc5aefffe0bfa462af43c1699d050");
	/* CMAC, RFC 4493 section 4: the first 0, 16, 40 and 64 bytes. */
	static const char *const cmacs[] = { "bb1d6929e95937287fa37d129b756746", "070a16b46b4d4144f79bdd9dd04a287c",
					     "dfa66747de9ae63030ca32611497c827", "51f0bebf7e3b9d92fc49741779363cfe" };
	static const size_t cmac_lens[] = { 0, 16, 40, 64 };
	uint8_t key[32], msg[64], tag[16], want[16];
	size_t klen = unhex(key, SP800_38A_K128);
	unhex(msg, SP800_38A_PLAIN);
	for (size_t i = 0; i < 4; i++) {
		struct p11_cmac m;
		assert_true(p11_cmac_init(&m, key, klen));
		p11_cmac_update(&m, msg, cmac_lens[i]);
		p11_cmac_out(&m, tag);
		unhex(want, cmacs[i]);
		assert_memory_equal(tag, want, 16);
	}
	/* RFC 3394 4.1: 128 bits of key data with a 128-bit KEK. */
	uint8_t kek[16], data[16], wrapped[24], back[24];
	size_t n = 0;
	unhex(kek, "000102030405060708090a0b0c0d0e0f");
	unhex(data, "00112233445566778899aabbccddeeff");
	unhex(want, "1fa68b0a8112b447");
	assert_int_equal(p11_aes_wrap(false, kek, 16, data, 16, wrapped), 24);
	assert_memory_equal(wrapped, want, 8);
	unhex(want, "aef34bd8fb5a7b829d3e862371d2cfe5");
	assert_memory_equal(wrapped + 8, want, 16);
	assert_true(p11_aes_unwrap(false, kek, 16, wrapped, 24, back, &n));
	assert_int_equal(n, 16);
	assert_memory_equal(back, data, 16);
}

static int end_portable(void **state)
{
	p11_aes_force_portable(false);
	return 0;
}

/* The same vectors through the CPU's code (where this host has it) and
 * the portable code. */
static void test_aes_known_answers(void **state)
{
	aes_known_answers();
	p11_aes_force_portable(true);
	aes_known_answers();
	p11_aes_force_portable(false);
}

/* The token's AES tests again, forced onto the portable code. */
static int setup_portable(void **state)
{
	p11_aes_force_portable(true);
	return setup(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_frame_bounds, setup),
		cmocka_unit_test_setup(test_sign, setup),
		cmocka_unit_test_setup(test_sign_init_sign_errors, setup),
		cmocka_unit_test_setup(test_private_value, setup),
		cmocka_unit_test_setup(test_sessions_and_pins, setup),
		cmocka_unit_test_setup(test_serial, setup),
		cmocka_unit_test_setup(test_apps_evicted, setup),
		cmocka_unit_test_setup(test_blob, setup),
		cmocka_unit_test_setup(test_rsa_sign, setup),
		cmocka_unit_test_setup(test_rsa_sign_wipes, setup),
		cmocka_unit_test_setup_teardown(test_rsa_sign_faulted, setup, end_nettle),
		cmocka_unit_test_setup_teardown(test_rsa_sign_paths, setup, end_nettle),
		{ "test_sign (nettle)", test_sign, setup_nettle, end_nettle, NULL },
		{ "test_rsa_sign (nettle)", test_rsa_sign, setup_nettle, end_nettle, NULL },
		{ "test_rsa_sign_wipes (nettle)", test_rsa_sign_wipes, setup_nettle, end_nettle, NULL },
		cmocka_unit_test_setup(test_rsa_attrs_import, setup),
		cmocka_unit_test_setup(test_rsa_decrypt, setup),
		cmocka_unit_test_setup(test_aes_modes, setup),
		cmocka_unit_test_setup(test_aes_errors, setup),
		cmocka_unit_test_setup(test_crypt_init_crypt, setup),
		cmocka_unit_test_setup(test_aes_key_wrap, setup),
		cmocka_unit_test_setup(test_macs, setup),
		cmocka_unit_test(test_aes_code),
		cmocka_unit_test_teardown(test_aes_known_answers, end_portable),
		{ "test_aes_modes (aes_ct)", test_aes_modes, setup_portable, end_portable, NULL },
		{ "test_aes_errors (aes_ct)", test_aes_errors, setup_portable, end_portable, NULL },
		{ "test_aes_key_wrap (aes_ct)", test_aes_key_wrap, setup_portable, end_portable, NULL },
		{ "test_macs (aes_ct)", test_macs, setup_portable, end_portable, NULL },
		cmocka_unit_test_setup(test_digests, setup),
		cmocka_unit_test_setup(test_secret_latching, setup),
		cmocka_unit_test_setup(test_copy_size, setup),
		cmocka_unit_test_setup(test_verify, setup),
		cmocka_unit_test_setup(test_rsa_encrypt, setup),
		cmocka_unit_test_setup(test_wrap_move, setup),
		cmocka_unit_test_setup(test_ecdh, setup),
		cmocka_unit_test_setup(test_pkcs8_openssl, setup),
		cmocka_unit_test_setup(test_ed25519_keygen, setup),
		cmocka_unit_test_setup(test_ed25519_verify, setup),
		cmocka_unit_test_setup(test_ed25519_rfc8032, setup),
		cmocka_unit_test_setup(test_ed25519_persist, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

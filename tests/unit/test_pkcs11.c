/* SPDX-License-Identifier: ISC */
/*
 * Unit tests of the PKCS#11 token guest's host-buildable modules
 * (services/pkcs11): frame bounds, the reader, and the token's request
 * handler on a token initialised through its own requests. Signatures are
 * checked with BearSSL's verifier (ECDSA) and OpenSSL's (RSA), which the
 * token never calls. Wiping is
 * checked by searching the token's whole state for a key's scalar after
 * the key was destroyed.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <bearssl.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>

#include "p11_ec.h"
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
static struct p11_token tok;
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
	size_t n = p11_token_handle(&tok, req, w.len, out);
	assert_true(n >= 10);
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
static int setup(void **state)
{
	uint8_t serial[P11_SERIAL] = "unit", label[P11_LABEL];
	memset(label, ' ', sizeof label);
	p11_token_init(&tok, &env, serial);
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
	/* Imports that ask for an extractable or readable key are refused. */
	CK_OBJECT_CLASS cls = CKO_PRIVATE_KEY;
	CK_KEY_TYPE kt = CKK_EC;
	uint8_t v[32] = { [31] = 7 };
	for (int i = 0; i < 2; i++) {
		CK_ATTRIBUTE imp[] = { { CKA_CLASS, &cls, sizeof cls }, { CKA_KEY_TYPE, &kt, sizeof kt },
				       { CKA_EC_PARAMS, (void *)p256, sizeof p256 }, { CKA_VALUE, v, sizeof v },
				       { i ? CKA_EXTRACTABLE : CKA_SENSITIVE, i ? &yes : &no, 1 } };
		begin_session(P11_OP_CREATE_OBJECT);
		p11_put_template(&w, imp, 5);
		assert_int_equal(send_req(), CKR_ATTRIBUTE_VALUE_INVALID);
	}
	/* Destroyed: no copy of the scalar is left anywhere in the token. */
	assert_true(in_token(d, sizeof d));
	begin_session(P11_OP_DESTROY_OBJECT);
	wire_put_u64(&w, priv);
	assert_int_equal(send_req(), CKR_OK);
	assert_false(in_token(d, sizeof d));
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
		cmocka_unit_test_setup(test_rsa_attrs_import, setup),
		cmocka_unit_test_setup(test_rsa_decrypt, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

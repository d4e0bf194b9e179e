/* SPDX-License-Identifier: ISC */
/*
 * The PKCS#11 token guest's frame decoding and request handling
 * (services/pkcs11) on hostile input. Each input is a run of requests on a
 * token that is already initialised, with a user PIN, a logged-in session
 * an EC P-256 key pair, an AES-256 key and an HMAC key made in it (so
 * signing, verifying, encryption, digests, attributes and search are in
 * reach). The input is cut into pieces:
 *   u8 sel, u16 len, len bytes
 * where sel's low 6 bits pick the operation and bit 7 the application (of
 * two); the bytes are its arguments. sel 0xff sends the bytes as a whole
 * body, header included, and 0xfe as a frame through p11_frame_len.
 * Invariants, besides the sanitizers: every reply is well-formed (version,
 * the request's op, a CK_RV) and fits, and neither the private key's
 * scalar nor a secret key's value appears in any; after the run, a free
 * object slot holds no byte (freed objects are wiped), the token objects
 * survive save/load/save byte for byte, and ending every session's
 * operations frees all they held (LeakSanitizer).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "p11_token.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A selector's low 6 bits reach every operation. */
_Static_assert(P11_OP_MAX <= 64, "sel's 6 bits no longer name every operation");

/* Deterministic, but a new seed at each call, as fresh entropy would be
 * (the same seed twice would hand out the key's own bytes as "random"
 * numbers); restarted at each input, so a crash reproduces. */
static uint64_t seeds;

static bool seed(void *ctx, br_hmac_drbg_context *d)
{
	uint64_t n = seeds++;
	br_hmac_drbg_init(d, &br_sha256_vtable, &n, sizeof n);
	return true;
}

static const struct p11_env env = { seed, NULL, NULL };
static struct p11_token base, tok;
static struct p11_objects copy;
static uint8_t out[P11_BODY_MAX], req[P11_BODY_MAX], blob[P11_OBJECTS_MAX * (P11_OBJ_DATA + 2048)],
	blob2[sizeof blob];
/* The values no reply may hold: the private scalar, the AES key's, the
 * HMAC key's. */
static uint8_t secrets[3][32];
static const uint8_t apps[2][P11_APP_ID] = { { 1 }, { 2 } };

/* Hands body to token t; the reply's length, r positioned on its
 * results. Aborts on a reply that is not well-formed. */
static size_t call(struct p11_token *t, const uint8_t *body, size_t len, struct wire_reader *r)
{
	size_t n = p11_token_handle(t, body, len, out);
	wire_reader_init(r, out, n);
	if (n) {
		uint8_t version = wire_get_u8(r), op = wire_get_u8(r);
		wire_get_u64(r);
		if (r->bad || n > P11_BODY_MAX || version != P11_VERSION || op != body[1])
			abort();
	}
	return n;
}

/* The setup's requests, from app 0: begin one in w, then setup_call. */
static struct wire_writer w;

static void begin(enum p11_op op)
{
	wire_writer_init(&w, req, sizeof req);
	p11_put_request(&w, op, apps[0]);
}

/* Sends w; aborts unless CKR_OK; the results in the returned reader. */
static struct wire_reader setup_call(void)
{
	struct wire_reader r;
	if (call(&base, req, w.len, &r) < 10 || memcmp(out + 2, "\0\0\0\0\0\0\0\0", 8))
		abort();
	return r;
}

static void login(uint64_t s, CK_USER_TYPE who, const char *pin)
{
	begin(P11_OP_LOGIN);
	wire_put_u64(&w, s);
	wire_put_u64(&w, who);
	wire_put_cstring(&w, pin);
	setup_call();
}

/* Keeps object h's CKA_VALUE (32 bytes) as secrets[i]. */
static void keep_value(uint64_t h, int i)
{
	struct p11_object *k = p11_objects_get(&base.objects, h);
	uint32_t len;
	const uint8_t *d = k ? p11_obj_attr(k, CKA_VALUE, &len) : NULL;
	if (!d || len != sizeof secrets[i])
		abort();
	memcpy(secrets[i], d, sizeof secrets[i]);
}

static void setup(void)
{
	static const uint8_t serial[P11_SERIAL] = "fuzz";
	p11_token_init(&base, &env, serial);
	uint8_t label[P11_LABEL];
	memset(label, ' ', sizeof label);
	begin(P11_OP_INIT_TOKEN);
	wire_put_cstring(&w, "87654321");
	wire_put_raw(&w, label, sizeof label);
	setup_call();
	begin(P11_OP_OPEN_SESSION);
	wire_put_u64(&w, CKF_SERIAL_SESSION | CKF_RW_SESSION);
	struct wire_reader r = setup_call();
	uint64_t s = wire_get_u64(&r);
	login(s, CKU_SO, "87654321");
	begin(P11_OP_INIT_PIN);
	wire_put_u64(&w, s);
	wire_put_cstring(&w, "123456");
	setup_call();
	begin(P11_OP_LOGOUT);
	wire_put_u64(&w, s);
	setup_call();
	login(s, CKU_USER, "123456");
	static const uint8_t p256[] = { 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07 };
	CK_BBOOL yes = 1;
	CK_ATTRIBUTE pub[] = { { CKA_EC_PARAMS, (void *)p256, sizeof p256 }, { CKA_TOKEN, &yes, 1 } };
	CK_ATTRIBUTE priv[] = { { CKA_TOKEN, &yes, 1 }, { CKA_ID, "k", 1 } };
	begin(P11_OP_GENERATE_KEY_PAIR);
	wire_put_u64(&w, s);
	wire_put_u64(&w, CKM_EC_KEY_PAIR_GEN);
	wire_put_string(&w, NULL, 0);
	p11_put_template(&w, pub, 2);
	p11_put_template(&w, priv, 2);
	r = setup_call();
	wire_get_u64(&r);
	keep_value(wire_get_u64(&r), 0);
	/* Secret keys, made in the token: AES (handle 3) and HMAC (4). */
	static const CK_MECHANISM_TYPE gens[2] = { CKM_AES_KEY_GEN, CKM_GENERIC_SECRET_KEY_GEN };
	for (int i = 0; i < 2; i++) {
		CK_ULONG len = 32;
		CK_ATTRIBUTE t[] = { { CKA_VALUE_LEN, &len, sizeof len }, { CKA_TOKEN, &yes, 1 } };
		begin(P11_OP_GENERATE_KEY);
		wire_put_u64(&w, s);
		wire_put_u64(&w, gens[i]);
		wire_put_string(&w, NULL, 0);
		p11_put_template(&w, t, 2);
		r = setup_call();
		keep_value(wire_get_u64(&r), 1 + i);
	}
}

static void check(void)
{
	static const struct p11_object zero;
	for (unsigned i = 0; i < P11_SESSIONS_MAX; i++)
		p11_session_end_ops(&tok, &tok.sessions[i], false);
	for (unsigned i = 0; i < P11_OBJECTS_MAX; i++)
		if (!tok.objects.o[i].handle && memcmp(&tok.objects.o[i], &zero, sizeof zero))
			abort(); /* a freed object left bytes behind */
	size_t n = p11_objects_save(&tok.objects, blob, sizeof blob);
	if (!n || !p11_objects_load(&copy, blob, n) || p11_objects_save(&copy, blob2, sizeof blob2) != n ||
	    memcmp(blob, blob2, n))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	if (!ready) {
		setup();
		ready = true;
	}
	memcpy(&tok, &base, sizeof tok);
	seeds = 1000;
	while (size >= 3) {
		uint8_t sel = data[0];
		size_t len = (size_t)data[1] << 8 | data[2];
		data += 3;
		size -= 3;
		if (len > size)
			len = size;
		size_t n;
		if (sel == 0xff || sel == 0xfe) {
			if (sel == 0xfe && (len < 4 || p11_frame_len(data) != len - 4))
				goto next;
			n = sel == 0xfe ? len - 4 : len;
			memcpy(req, sel == 0xfe ? data + 4 : data, n);
		} else {
			struct wire_writer fw;
			wire_writer_init(&fw, req, sizeof req);
			p11_put_request(&fw, (enum p11_op)(sel & 0x3f), apps[sel >> 7]);
			wire_put_raw(&fw, data, len);
			n = fw.len;
		}
		struct wire_reader r;
		n = call(&tok, req, n, &r);
		for (int k = 0; k < 3; k++)
			for (size_t i = 0; i + sizeof secrets[k] <= n; i++)
				if (!memcmp(out + i, secrets[k], sizeof secrets[k]))
					abort(); /* a key's value left the token */
	next:
		data += len;
		size -= len;
	}
	check();
	return 0;
}

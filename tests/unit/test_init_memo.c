/* SPDX-License-Identifier: ISC */
/*
 * The module's memory of the inits the token accepted (services/pkcs11/
 * module/init_memo.c): a C_SignInit, C_EncryptInit or C_DecryptInit is
 * deferred only when the token accepted the same one on the session
 * before and no operation of its kind is on there ("the same": every
 * parameter byte for a signature, those that can make an AES init fail
 * for encryption and decryption); each kind apart; the session's
 * operations as the module tracks them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "init_memo.h"

static struct init_call make_kind(enum init_kind kind, CK_SESSION_HANDLE s, CK_MECHANISM_TYPE mech,
				  CK_OBJECT_HANDLE key, const void *p, size_t plen)
{
	struct init_call i;
	assert_true(init_call_make(&i, kind, s, mech, p, plen, key));
	return i;
}

static struct init_call make(CK_SESSION_HANDLE s, CK_MECHANISM_TYPE mech, CK_OBJECT_HANDLE key, const void *p,
			     size_t plen)
{
	return make_kind(INIT_SIGN, s, mech, key, p, plen);
}

static void be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

static void be64(uint8_t *p, uint64_t v)
{
	be32(p, (uint32_t)(v >> 32));
	be32(p + 4, (uint32_t)v);
}

/* CK_GCM_PARAMS as the module flattens it (p11_wire.h): u64 ulIvBits,
 * u64 ulTagBits, bytes iv, bytes aad; its length. */
static size_t gcm(uint8_t *p, uint64_t iv_bits, uint64_t tag_bits, const uint8_t *iv, uint32_t ivlen,
		  const uint8_t *aad, uint32_t aadlen)
{
	be64(p, iv_bits);
	be64(p + 8, tag_bits);
	be32(p + 16, ivlen);
	memcpy(p + 20, iv, ivlen);
	be32(p + 20 + ivlen, aadlen);
	if (aadlen)
		memcpy(p + 24 + ivlen, aad, aadlen);
	return 24 + ivlen + aadlen;
}

static int setup(void **state)
{
	init_memo_clear();
	return 0;
}

/* Accepted, its operation over: remembered, ready to defer. */
static void known(const struct init_call *i)
{
	init_memo_accepted(i);
	init_memo_active(i->session, i->kind, false);
}

static void test_unknown_never_deferred(void **state)
{
	struct init_call i = make(1, CKM_ECDSA, 7, NULL, 0);
	assert_false(init_memo_defer(&i));
	assert_false(init_memo_deferred(1, INIT_SIGN));
	uint8_t big[INIT_MEMO_PARAM + 1] = { 0 };
	assert_false(init_call_make(&i, INIT_SIGN, 1, CKM_RSA_PKCS_PSS, big, sizeof big, 7));
	assert_false(init_call_make(&i, INIT_SIGN, 1, CKM_ECDSA, NULL, 4, 7));
	assert_false(init_call_make(&i, INIT_KINDS, 1, CKM_ECDSA, NULL, 0, 7));
	/* Encryption and decryption: AES's five modes only. */
	assert_false(init_call_make(&i, INIT_ENCRYPT, 1, CKM_RSA_PKCS_OAEP, NULL, 0, 7));
	assert_false(init_call_make(&i, INIT_DECRYPT, 1, CKM_RSA_PKCS, NULL, 0, 7));
	assert_false(init_call_make(&i, INIT_ENCRYPT, 1, CKM_DES3_CBC, big, 8, 7));
	/* A GCM parameter whose AAD makes it longer than the memo keeps. */
	static uint8_t p[INIT_MEMO_PARAM + 64], iv[12], aad[INIT_MEMO_PARAM];
	size_t plen = gcm(p, 96, 128, iv, 12, aad, INIT_MEMO_PARAM - 36 + 1);
	assert_false(init_call_make(&i, INIT_ENCRYPT, 1, CKM_AES_GCM, p, plen, 7));
	plen = gcm(p, 96, 128, iv, 12, aad, INIT_MEMO_PARAM - 36);
	assert_true(init_call_make(&i, INIT_ENCRYPT, 1, CKM_AES_GCM, p, plen, 7));
}

/* Accepted: its operation is on, so the same init is the token's to
 * refuse; once the operation is over it is deferred, once. */
static void test_accepted_then_deferred(void **state)
{
	struct init_call i = make(1, CKM_ECDSA, 7, NULL, 0), got;
	init_memo_accepted(&i);
	assert_false(init_memo_defer(&i));
	init_memo_active(1, INIT_SIGN, false);
	assert_true(init_memo_defer(&i));
	assert_true(init_memo_deferred(1, INIT_SIGN));
	assert_false(init_memo_defer(&i)); /* an operation waits */
	assert_true(init_memo_take(1, INIT_SIGN, &got));
	assert_memory_equal(&got, &i, sizeof i);
	assert_false(init_memo_deferred(1, INIT_SIGN));
	assert_false(init_memo_take(1, INIT_SIGN, &got));
	assert_false(init_memo_defer(&i)); /* sent: on until the reply says */
	init_memo_active(1, INIT_SIGN, false);
	assert_true(init_memo_defer(&i));
}

/* A signature: only the very same call; another mechanism, key,
 * parameter or session goes to the token. */
static void test_only_the_same(void **state)
{
	uint8_t p[24] = { 1 }, q[24] = { 2 };
	struct init_call i = make(1, CKM_RSA_PKCS_PSS, 7, p, sizeof p);
	known(&i);
	struct init_call other[] = {
		make(1, CKM_RSA_PKCS_PSS, 7, q, sizeof q), make(1, CKM_RSA_PKCS_PSS, 7, p, 23),
		make(1, CKM_RSA_PKCS_PSS, 8, p, sizeof p), make(1, CKM_SHA256_RSA_PKCS_PSS, 7, p, sizeof p),
		make(2, CKM_RSA_PKCS_PSS, 7, p, sizeof p), make_kind(INIT_ENCRYPT, 1, CKM_AES_CBC, 7, p, 16),
	};
	for (size_t k = 0; k < sizeof other / sizeof other[0]; k++)
		assert_false(init_memo_defer(&other[k]));
	assert_true(init_memo_defer(&i));
}

/* Whether init b is deferred after a was accepted on its session (a
 * fresh memo each time). */
static bool defers_after(const struct init_call *a, const struct init_call *b)
{
	init_memo_clear();
	known(a);
	return init_memo_defer(b);
}

/* AES-GCM: the IV's and the AAD's bytes, and the AAD's length, may
 * differ; ulIvBits, ulTagBits, the IV's length, the key and the
 * mechanism may not. The deferred init is the new one, its own IV. */
static void test_gcm(void **state)
{
	uint8_t iv[16] = { 1 }, iv2[16] = { 2 }, aad[40] = { 3 }, aad2[40] = { 4 };
	uint8_t pa[128], pb[128];
	struct init_call a = make_kind(INIT_ENCRYPT, 1, CKM_AES_GCM, 7, pa, gcm(pa, 96, 128, iv, 12, aad, 20));
#define B(key, ...) make_kind(INIT_ENCRYPT, 1, CKM_AES_GCM, key, pb, gcm(pb, __VA_ARGS__))
	struct init_call b = B(7, 96, 128, iv2, 12, aad, 20);
	assert_true(defers_after(&a, &b));
	struct init_call got;
	assert_true(init_memo_take(1, INIT_ENCRYPT, &got));
	assert_memory_equal(&got, &b, sizeof b); /* the new IV goes */
	b = B(7, 96, 128, iv2, 12, aad2, 20);
	assert_true(defers_after(&a, &b));
	b = B(7, 96, 128, iv2, 12, aad2, 0);
	assert_true(defers_after(&a, &b));
	b = B(7, 96, 128, iv2, 12, aad2, 40);
	assert_true(defers_after(&a, &b));
	b = B(8, 96, 128, iv2, 12, aad, 20); /* another key */
	assert_false(defers_after(&a, &b));
	b = B(7, 96, 96, iv, 12, aad, 20); /* ulTagBits */
	assert_false(defers_after(&a, &b));
	b = B(7, 0, 128, iv, 12, aad, 20); /* ulIvBits */
	assert_false(defers_after(&a, &b));
	b = B(7, 96, 128, iv, 16, aad, 16); /* the IV's length, the same total */
	assert_false(defers_after(&a, &b));
	b = B(7, 128, 128, iv, 16, aad, 20);
	assert_false(defers_after(&a, &b));
	b = make_kind(INIT_ENCRYPT, 1, CKM_AES_CTR, 7, pa, a.plen); /* another mechanism */
	assert_false(defers_after(&a, &b));
	/* A parameter that is not whole: its AAD's length is not what is
	 * left. */
	b = B(7, 96, 128, iv2, 12, aad, 20);
	be32(b.param + 32, 19);
	assert_false(defers_after(&a, &b));
	b.plen = 20;
	assert_false(defers_after(&a, &b));
#undef B
}

/* CBC and CBC_PAD: the IV's bytes may differ, not its length; CTR: the
 * counter block may, not ulCounterBits; ECB takes no parameter. */
static void test_cbc_ctr_ecb(void **state)
{
	uint8_t iv[17] = { 1 }, iv2[17] = { 2 };
	static const CK_MECHANISM_TYPE cbc[] = { CKM_AES_CBC, CKM_AES_CBC_PAD };
	for (unsigned m = 0; m < 2; m++) {
		struct init_call a = make_kind(INIT_DECRYPT, 1, cbc[m], 7, iv, 16);
		struct init_call b = make_kind(INIT_DECRYPT, 1, cbc[m], 7, iv2, 16);
		assert_true(defers_after(&a, &b));
		b = make_kind(INIT_DECRYPT, 1, cbc[m], 7, iv2, 17);
		assert_false(defers_after(&a, &b));
		b = make_kind(INIT_DECRYPT, 1, cbc[m], 9, iv2, 16);
		assert_false(defers_after(&a, &b));
		b = make_kind(INIT_DECRYPT, 1, cbc[m ^ 1], 7, iv2, 16);
		assert_false(defers_after(&a, &b));
	}
	CK_AES_CTR_PARAMS c1 = { 32, { 1 } }, c2 = { 32, { 2 } }, c3 = { 64, { 1 } };
	struct init_call a = make_kind(INIT_ENCRYPT, 1, CKM_AES_CTR, 7, &c1, sizeof c1);
	struct init_call b = make_kind(INIT_ENCRYPT, 1, CKM_AES_CTR, 7, &c2, sizeof c2);
	assert_true(defers_after(&a, &b));
	b = make_kind(INIT_ENCRYPT, 1, CKM_AES_CTR, 7, &c3, sizeof c3);
	assert_false(defers_after(&a, &b));
	b = make_kind(INIT_ENCRYPT, 1, CKM_AES_CTR, 7, &c2, sizeof c2 - 1);
	assert_false(defers_after(&a, &b));
	a = make_kind(INIT_ENCRYPT, 1, CKM_AES_ECB, 7, NULL, 0);
	b = make_kind(INIT_ENCRYPT, 1, CKM_AES_ECB, 7, NULL, 0);
	assert_true(defers_after(&a, &b));
	b = make_kind(INIT_ENCRYPT, 1, CKM_AES_ECB, 7, iv, 16);
	assert_false(defers_after(&a, &b));
	b = make_kind(INIT_ENCRYPT, 1, CKM_AES_ECB, 8, NULL, 0);
	assert_false(defers_after(&a, &b));
}

/* Each kind apart: a signature's, an encryption's and a decryption's
 * inits on one session, each deferred, taken, refused on its own. */
static void test_kinds_apart(void **state)
{
	uint8_t iv[16] = { 1 };
	struct init_call s = make(1, CKM_ECDSA, 7, NULL, 0), e = make_kind(INIT_ENCRYPT, 1, CKM_AES_CBC, 9, iv, 16),
			 d = make_kind(INIT_DECRYPT, 1, CKM_AES_CBC, 9, iv, 16), got;
	known(&e);
	assert_false(init_memo_defer(&d)); /* an encryption's is not a decryption's */
	known(&s);
	known(&d);
	init_memo_accepted(&e); /* again: its operation on */
	assert_false(init_memo_defer(&e));
	assert_true(init_memo_defer(&s));
	assert_true(init_memo_defer(&d));
	assert_false(init_memo_deferred(1, INIT_ENCRYPT));
	assert_true(init_memo_take(1, INIT_DECRYPT, &got));
	assert_int_equal(got.kind, INIT_DECRYPT);
	assert_true(init_memo_deferred(1, INIT_SIGN));
	init_memo_refused(1, INIT_DECRYPT);
	init_memo_active(1, INIT_ENCRYPT, false);
	assert_false(init_memo_defer(&d));
	assert_true(init_memo_defer(&e));
	assert_true(init_memo_take(1, INIT_SIGN, &got));
	assert_int_equal(got.kind, INIT_SIGN);
	init_memo_drop(1); /* closed: every kind */
	assert_false(init_memo_deferred(1, INIT_ENCRYPT));
	init_memo_active(1, INIT_SIGN, false);
	assert_false(init_memo_defer(&s));
}

/* Refused, closed, keys changed, cleared: the next init asks the token.
 * A refusal or a close on one session leaves the others. */
static void test_forgotten(void **state)
{
	struct init_call a = make(1, CKM_ECDSA, 7, NULL, 0), b = make(2, CKM_ECDSA, 7, NULL, 0);
	uint8_t iv[16] = { 0 };
	struct init_call c = make_kind(INIT_ENCRYPT, 2, CKM_AES_CBC, 7, iv, 16);
	known(&a);
	known(&b);
	known(&c);
	init_memo_refused(1, INIT_SIGN);
	assert_false(init_memo_defer(&a));
	init_memo_drop(1);
	assert_false(init_memo_defer(&a));
	assert_true(init_memo_defer(&b));
	init_memo_unsure(); /* a deferred one stays deferred (its call sends it) */
	assert_true(init_memo_deferred(2, INIT_SIGN));
	assert_false(init_memo_defer(&c)); /* every kind's keys */
	struct init_call got;
	assert_true(init_memo_take(2, INIT_SIGN, &got));
	init_memo_active(2, INIT_SIGN, false);
	assert_false(init_memo_defer(&b));
	known(&b);
	known(&c);
	init_memo_clear();
	assert_false(init_memo_defer(&b));
	assert_false(init_memo_defer(&c));
}

/* More sessions than slots: one is forgotten, none mixed up; a session
 * whose init is deferred keeps it, however many come after. */
static void test_full(void **state)
{
	for (CK_SESSION_HANDLE s = 1; s <= INIT_MEMO_SLOTS + 4; s++) {
		struct init_call i = make(s, CKM_ECDSA, s, NULL, 0);
		known(&i);
	}
	unsigned deferred = 0;
	for (CK_SESSION_HANDLE s = 1; s <= INIT_MEMO_SLOTS + 4; s++) {
		struct init_call i = make(s, CKM_ECDSA, s, NULL, 0), wrong = make(s, CKM_ECDSA, s + 1, NULL, 0);
		assert_false(init_memo_defer(&wrong));
		deferred += init_memo_defer(&i);
	}
	assert_int_equal(deferred, INIT_MEMO_SLOTS);
	/* Every slot waits on a deferred init: a new session is not kept. */
	struct init_call late = make(100, CKM_ECDSA, 1, NULL, 0), got;
	known(&late);
	assert_false(init_memo_defer(&late));
	unsigned taken = 0;
	for (CK_SESSION_HANDLE s = 1; s <= INIT_MEMO_SLOTS + 4; s++)
		if (init_memo_take(s, INIT_SIGN, &got)) {
			assert_int_equal(got.session, s);
			assert_int_equal(got.key, s);
			taken++;
		}
	assert_int_equal(taken, INIT_MEMO_SLOTS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_unknown_never_deferred, setup),
		cmocka_unit_test_setup(test_accepted_then_deferred, setup),
		cmocka_unit_test_setup(test_only_the_same, setup),
		cmocka_unit_test_setup(test_gcm, setup),
		cmocka_unit_test_setup(test_cbc_ctr_ecb, setup),
		cmocka_unit_test_setup(test_kinds_apart, setup),
		cmocka_unit_test_setup(test_forgotten, setup),
		cmocka_unit_test_setup(test_full, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: ISC */
/*
 * The module's memory of accepted C_SignInit calls (services/pkcs11/module/
 * sign_memo.c): a C_SignInit is deferred only when the token accepted the
 * same one on the session before and no operation is on there; the
 * session's operation as the module tracks it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sign_memo.h"

static struct sign_init make(CK_SESSION_HANDLE s, CK_MECHANISM_TYPE mech, CK_OBJECT_HANDLE key, const void *p,
			     size_t plen)
{
	CK_MECHANISM m = { mech, (void *)p, plen };
	struct sign_init i;
	assert_true(sign_init_make(&i, s, &m, key));
	return i;
}

static int setup(void **state)
{
	sign_memo_clear();
	return 0;
}

static void test_unknown_never_deferred(void **state)
{
	struct sign_init i = make(1, CKM_ECDSA, 7, NULL, 0);
	assert_false(sign_memo_defer(&i));
	assert_false(sign_memo_deferred(1));
	CK_MECHANISM big = { CKM_RSA_PKCS_PSS, (uint8_t[SIGN_MEMO_PARAM + 1]){ 0 }, SIGN_MEMO_PARAM + 1 };
	assert_false(sign_init_make(&i, 1, &big, 7));
	assert_false(sign_init_make(&i, 1, NULL, 7));
	CK_MECHANISM nullp = { CKM_ECDSA, NULL, 4 };
	assert_false(sign_init_make(&i, 1, &nullp, 7));
}

/* Accepted: its operation is on, so the same C_SignInit is the token's
 * to refuse; once the operation is over it is deferred, once. */
static void test_accepted_then_deferred(void **state)
{
	struct sign_init i = make(1, CKM_ECDSA, 7, NULL, 0), got;
	sign_memo_accepted(&i);
	assert_false(sign_memo_defer(&i));
	sign_memo_active(1, false);
	assert_true(sign_memo_defer(&i));
	assert_true(sign_memo_deferred(1));
	assert_false(sign_memo_defer(&i)); /* an operation waits */
	assert_true(sign_memo_take(1, &got));
	assert_memory_equal(&got, &i, sizeof i);
	assert_false(sign_memo_deferred(1));
	assert_false(sign_memo_take(1, &got));
	assert_false(sign_memo_defer(&i)); /* sent: on until the reply says */
	sign_memo_active(1, false);
	assert_true(sign_memo_defer(&i));
}

/* Only the very same call: another mechanism, key, parameter or
 * session goes to the token. */
static void test_only_the_same(void **state)
{
	uint8_t p[24] = { 1 }, q[24] = { 2 };
	struct sign_init i = make(1, CKM_RSA_PKCS_PSS, 7, p, sizeof p);
	sign_memo_accepted(&i);
	sign_memo_active(1, false);
	struct sign_init other[] = {
		make(1, CKM_RSA_PKCS_PSS, 7, q, sizeof q), make(1, CKM_RSA_PKCS_PSS, 7, p, 23),
		make(1, CKM_RSA_PKCS_PSS, 8, p, sizeof p), make(1, CKM_SHA256_RSA_PKCS_PSS, 7, p, sizeof p),
		make(2, CKM_RSA_PKCS_PSS, 7, p, sizeof p),
	};
	for (size_t k = 0; k < sizeof other / sizeof other[0]; k++)
		assert_false(sign_memo_defer(&other[k]));
	assert_true(sign_memo_defer(&i));
}

/* Refused, closed, keys changed, cleared: the next C_SignInit asks the
 * token. A refusal or a close on one session leaves the others. */
static void test_forgotten(void **state)
{
	struct sign_init a = make(1, CKM_ECDSA, 7, NULL, 0), b = make(2, CKM_ECDSA, 7, NULL, 0);
	sign_memo_accepted(&a);
	sign_memo_accepted(&b);
	sign_memo_active(1, false);
	sign_memo_active(2, false);
	sign_memo_refused(1);
	assert_false(sign_memo_defer(&a));
	sign_memo_drop(1);
	assert_false(sign_memo_defer(&a));
	assert_true(sign_memo_defer(&b));
	sign_memo_unsure(); /* a deferred one stays deferred (C_Sign sends it) */
	assert_true(sign_memo_deferred(2));
	struct sign_init got;
	assert_true(sign_memo_take(2, &got));
	sign_memo_active(2, false);
	assert_false(sign_memo_defer(&b));
	sign_memo_accepted(&b);
	sign_memo_active(2, false);
	sign_memo_clear();
	assert_false(sign_memo_defer(&b));
}

/* More sessions than slots: one is forgotten, none mixed up. */
static void test_full(void **state)
{
	for (CK_SESSION_HANDLE s = 1; s <= SIGN_MEMO_SLOTS + 4; s++) {
		struct sign_init i = make(s, CKM_ECDSA, s, NULL, 0);
		sign_memo_accepted(&i);
		sign_memo_active(s, false);
	}
	unsigned deferred = 0;
	for (CK_SESSION_HANDLE s = 1; s <= SIGN_MEMO_SLOTS + 4; s++) {
		struct sign_init i = make(s, CKM_ECDSA, s, NULL, 0), wrong = make(s, CKM_ECDSA, s + 1, NULL, 0);
		assert_false(sign_memo_defer(&wrong));
		deferred += sign_memo_defer(&i);
	}
	assert_int_equal(deferred, SIGN_MEMO_SLOTS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_unknown_never_deferred, setup),
		cmocka_unit_test_setup(test_accepted_then_deferred, setup),
		cmocka_unit_test_setup(test_only_the_same, setup),
		cmocka_unit_test_setup(test_forgotten, setup),
		cmocka_unit_test_setup(test_full, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

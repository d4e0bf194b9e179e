/* SPDX-License-Identifier: ISC */
/*
 * libcloak-pkcs11.so (services/pkcs11/module) as a program loads it: every
 * function of its list answers CKR_CRYPTOKI_NOT_INITIALIZED before
 * C_Initialize, and so does a child after fork() until it initialises
 * again, as PKCS#11 has it (the module needs no token for that). The
 * module is the one built beside this test ($(O)/pkcs11/).
 */
#include <dlfcn.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#define CRYPTOKI_COMPAT
#include <p11-kit/pkcs11.h>

static CK_FUNCTION_LIST *f;

/* Each function of the list but C_Initialize and C_GetFunctionList, with
 * arguments it must not look at: returns how many did not answer want
 * (and prints their names). */
static int all_answer(CK_RV want)
{
	int wrong = 0;
	CK_ULONG n = 0;
	CK_BYTE b[8] = { 0 };
	CK_INFO info;
	CK_SLOT_INFO si;
	CK_TOKEN_INFO ti;
	CK_SESSION_INFO ssi;
	CK_MECHANISM_INFO mi;
	CK_MECHANISM m = { CKM_SHA256, NULL, 0 };
	CK_ATTRIBUTE a = { CKA_LABEL, b, sizeof b };
	CK_SLOT_ID slot = 0;
	CK_MECHANISM_TYPE mt[4];
	CK_OBJECT_HANDLE h = 0;
	CK_SESSION_HANDLE s = 0;
	n = sizeof b;
#define CHECK(call)                                                             \
	do {                                                                    \
		CK_RV rv_ = f->call;                                            \
		if (rv_ != want) {                                              \
			printf("# %s: 0x%lx, not 0x%lx\n", #call, rv_, want); \
			wrong++;                                                \
		}                                                               \
		n = sizeof b;                                                   \
	} while (0)
	CHECK(C_Finalize(NULL));
	CHECK(C_GetInfo(&info));
	CHECK(C_GetSlotList(CK_TRUE, &slot, &n));
	CHECK(C_GetSlotInfo(0, &si));
	CHECK(C_GetTokenInfo(0, &ti));
	CHECK(C_GetMechanismList(0, mt, &n));
	CHECK(C_GetMechanismInfo(0, CKM_SHA256, &mi));
	CHECK(C_InitToken(0, b, 4, b));
	CHECK(C_InitPIN(1, b, 4));
	CHECK(C_SetPIN(1, b, 4, b, 4));
	CHECK(C_OpenSession(0, CKF_SERIAL_SESSION, NULL, NULL, &s));
	CHECK(C_CloseSession(1));
	CHECK(C_CloseAllSessions(0));
	CHECK(C_GetSessionInfo(1, &ssi));
	CHECK(C_GetOperationState(1, b, &n));
	CHECK(C_SetOperationState(1, b, n, 0, 0));
	CHECK(C_Login(1, CKU_USER, b, 4));
	CHECK(C_Logout(1));
	CHECK(C_CreateObject(1, &a, 1, &h));
	CHECK(C_CopyObject(1, 1, &a, 1, &h));
	CHECK(C_DestroyObject(1, 1));
	CHECK(C_GetObjectSize(1, 1, &n));
	CHECK(C_GetAttributeValue(1, 1, &a, 1));
	CHECK(C_SetAttributeValue(1, 1, &a, 1));
	CHECK(C_FindObjectsInit(1, &a, 1));
	CHECK(C_FindObjects(1, &h, 1, &n));
	CHECK(C_FindObjectsFinal(1));
	CHECK(C_EncryptInit(1, &m, 1));
	CHECK(C_Encrypt(1, b, 1, b, &n));
	CHECK(C_EncryptUpdate(1, b, 1, b, &n));
	CHECK(C_EncryptFinal(1, b, &n));
	CHECK(C_DecryptInit(1, &m, 1));
	CHECK(C_Decrypt(1, b, 1, b, &n));
	CHECK(C_DecryptUpdate(1, b, 1, b, &n));
	CHECK(C_DecryptFinal(1, b, &n));
	CHECK(C_DigestInit(1, &m));
	CHECK(C_Digest(1, b, 1, b, &n));
	CHECK(C_DigestUpdate(1, b, 1));
	CHECK(C_DigestKey(1, 1));
	CHECK(C_DigestFinal(1, b, &n));
	CHECK(C_SignInit(1, &m, 1));
	CHECK(C_Sign(1, b, 1, b, &n));
	CHECK(C_SignUpdate(1, b, 1));
	CHECK(C_SignFinal(1, b, &n));
	CHECK(C_SignRecoverInit(1, &m, 1));
	CHECK(C_SignRecover(1, b, 1, b, &n));
	CHECK(C_VerifyInit(1, &m, 1));
	CHECK(C_Verify(1, b, 1, b, 1));
	CHECK(C_VerifyUpdate(1, b, 1));
	CHECK(C_VerifyFinal(1, b, 1));
	CHECK(C_VerifyRecoverInit(1, &m, 1));
	CHECK(C_VerifyRecover(1, b, 1, b, &n));
	CHECK(C_DigestEncryptUpdate(1, b, 1, b, &n));
	CHECK(C_DecryptDigestUpdate(1, b, 1, b, &n));
	CHECK(C_SignEncryptUpdate(1, b, 1, b, &n));
	CHECK(C_DecryptVerifyUpdate(1, b, 1, b, &n));
	CHECK(C_GenerateKey(1, &m, &a, 1, &h));
	CHECK(C_GenerateKeyPair(1, &m, &a, 1, &a, 1, &h, &h));
	CHECK(C_WrapKey(1, &m, 1, 2, b, &n));
	CHECK(C_UnwrapKey(1, &m, 1, b, 1, &a, 1, &h));
	CHECK(C_DeriveKey(1, &m, 1, &a, 1, &h));
	CHECK(C_SeedRandom(1, b, 1));
	CHECK(C_GenerateRandom(1, b, 1));
	CHECK(C_GetFunctionStatus(1));
	CHECK(C_CancelFunction(1));
	CHECK(C_WaitForSlotEvent(CKF_DONT_BLOCK, &slot, NULL));
#undef CHECK
	return wrong;
}

static int setup(void **state)
{
	char exe[PATH_MAX], path[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	*strrchr(exe, '/') = '\0'; /* $(O)/tests, or $(O)/san/tests */
	char *o = strrchr(exe, '/');
	*o = '\0';
	if (!strcmp(o + 1, "tests") && strlen(exe) > 4 && !strcmp(exe + strlen(exe) - 4, "/san"))
		exe[strlen(exe) - 4] = '\0';
	snprintf(path, sizeof path, "%s/pkcs11/libcloak-pkcs11.so", exe);
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		fail_msg("%s", dlerror());
	CK_C_GetFunctionList get = (CK_C_GetFunctionList)dlsym(lib, "C_GetFunctionList");
	assert_non_null(get);
	assert_int_equal(get(&f), CKR_OK);
	return 0;
}

static void test_not_initialized(void **state)
{
	assert_int_equal(all_answer(CKR_CRYPTOKI_NOT_INITIALIZED), 0);
}

/* Initialised in the parent (no token needed: no call reaches it), a
 * forked child gets CKR_CRYPTOKI_NOT_INITIALIZED from every function until
 * its own C_Initialize. */
static void test_forked_child(void **state)
{
	unsetenv("CLOAK_PKCS11_SOCKET");
	assert_int_equal(f->C_Initialize(NULL), CKR_OK);
	assert_int_equal(f->C_Initialize(NULL), CKR_CRYPTOKI_ALREADY_INITIALIZED);
	/* The control: initialised, a call answers something else. */
	CK_INFO info;
	assert_int_equal(f->C_GetInfo(&info), CKR_OK);
	assert_int_equal(f->C_SeedRandom(1, (CK_BYTE *)"x", 1), CKR_RANDOM_SEED_NOT_SUPPORTED);
	fflush(stdout);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		int wrong = all_answer(CKR_CRYPTOKI_NOT_INITIALIZED);
		if (!wrong && f->C_Initialize(NULL) != CKR_OK)
			wrong = 100;
		if (!wrong && f->C_GetInfo(&info) != CKR_OK)
			wrong = 101;
		fflush(stdout);
		_exit(wrong);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(f->C_Finalize(NULL), CKR_OK);
	assert_int_equal(all_answer(CKR_CRYPTOKI_NOT_INITIALIZED), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_not_initialized),
		cmocka_unit_test(test_forked_child),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}

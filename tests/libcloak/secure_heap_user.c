/* SPDX-License-Identifier: ISC */
/*
 * A program written for OpenSSL's secure heap (linked with -lcrypto), run by
 * openssl.bats with libcloak-openssl preloaded: it checks the documented
 * behaviour of the CRYPTO_secure_* calls and prints "ok NAME" or "FAIL NAME"
 * for each; exit 0 when all hold. With the argument "plain" (no preload) it
 * only reports whether a secure allocation can be read by process_vm_readv.
 */
#include <errno.h>
#include <openssl/crypto.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static int failures;

static void check(bool ok, const char *name)
{
	printf("%s %s\n", ok ? "ok" : "FAIL", name);
	failures += !ok;
}

static bool readable(const void *p, size_t n)
{
	char buf[64];
	struct iovec local = { buf, n }, remote = { (void *)p, n };
	return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)n;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "plain")) {
		void *p = OPENSSL_secure_malloc(32);
		printf("%s\n", readable(p, 32) ? "readable" : "secret");
		OPENSSL_secure_free(p);
		return 0;
	}
	check(CRYPTO_secure_malloc_initialized() == 1, "secure memory is there without init");
	unsigned char *p = OPENSSL_secure_malloc(40);
	check(p && !readable(p, 32) && errno == EFAULT, "secure allocations are secret memory");
	check(CRYPTO_secure_allocated(p) == 1, "CRYPTO_secure_allocated of a secure allocation");
	check(CRYPTO_secure_actual_size(p) >= 40, "actual size at least the size asked for");
	check(CRYPTO_secure_used() >= 40, "CRYPTO_secure_used counts it");
	void *q = OPENSSL_malloc(40);
	check(q && CRYPTO_secure_allocated(q) == 0, "CRYPTO_secure_allocated of OPENSSL_malloc memory");
	check(OPENSSL_malloc(0) == NULL, "OPENSSL_malloc(0) is NULL, as in OpenSSL");
	OPENSSL_free(q);
	check(CRYPTO_secure_malloc_done() == 0, "CRYPTO_secure_malloc_done refuses while in use");
	OPENSSL_secure_clear_free(p, 40);
	check(CRYPTO_secure_used() == 0, "nothing in use after the free");
	check(CRYPTO_secure_malloc_done() == 1, "CRYPTO_secure_malloc_done once nothing is in use");
	check(CRYPTO_secure_malloc_init(1000, 16) == 0, "init refuses a size not a power of two");
	check(CRYPTO_secure_malloc_init(4096, 16) == 1, "init with a power of two");
	check(CRYPTO_secure_malloc_init(4096, 16) == 0, "init twice refuses");
	void *v[200];
	int got = 0;
	for (int i = 0; i < 200; i++)
		if ((v[i] = OPENSSL_secure_malloc(64)))
			got++;
	printf("# %d of 200 64-byte allocations in a 4096-byte heap, %zu bytes used\n", got,
	       CRYPTO_secure_used());
	check(got > 0 && got <= 4096 / 64 && CRYPTO_secure_used() <= 4096,
	      "no allocation past the size given to init");
	for (int i = 0; i < 200; i++)
		OPENSSL_secure_free(v[i]);
	check(CRYPTO_secure_malloc_done() == 1, "done after all are freed");
	check(OPENSSL_secure_malloc(8000) != NULL, "after done, no limit");
	return failures ? 1 : 0;
}

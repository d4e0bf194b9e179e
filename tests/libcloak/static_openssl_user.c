/* SPDX-License-Identifier: ISC */
/*
 * A program with OpenSSL linked in statically: generates a P-256 key and
 * reports whether its secure-heap allocation is readable by
 * process_vm_readv. openssl.bats shows that an LD_PRELOAD cannot replace
 * functions inside such a program.
 */
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <sys/uio.h>
#include <unistd.h>

int main(void)
{
	EVP_PKEY *k = EVP_EC_gen("P-256");
	void *p = OPENSSL_secure_malloc(32);
	char buf[32];
	struct iovec local = { buf, 32 }, remote = { p, 32 };
	printf("%s %s\n", k ? "key" : "nokey",
	       process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == 32 ? "readable" : "secret");
	OPENSSL_secure_free(p);
	EVP_PKEY_free(k);
	return 0;
}

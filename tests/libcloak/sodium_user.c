/* SPDX-License-Identifier: ISC */
/*
 * A program written for libsodium (linked with -lsodium): reports whether its
 * sodium_malloc'd key can be read with process_vm_readv. Run plain it says
 * "readable"; with LD_PRELOAD=libcloak-sodium.so it must say "secret".
 */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

int main(void)
{
	if (sodium_init() < 0)
		return 2;
	unsigned char *key = sodium_malloc(crypto_secretbox_KEYBYTES);
	if (!key)
		return 3;
	crypto_secretbox_keygen(key);
	sodium_mprotect_readonly(key);
	char copy[crypto_secretbox_KEYBYTES];
	struct iovec local = { copy, sizeof copy }, remote = { key, sizeof copy };
	ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
	printf("%s\n", n == (ssize_t)sizeof copy ? "readable" : errno == EFAULT ? "secret" : "error");
	sodium_free(key);
	return 0;
}

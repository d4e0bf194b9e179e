/* SPDX-License-Identifier: ISC */
/*
 * Loads libcrypto into a new link-map namespace (dlmopen), where LD_PRELOAD
 * libraries are not loaded, and reports whether a secure-heap allocation
 * made there can be read by process_vm_readv: "readable" or "secret".
 * openssl.bats runs it under libcloak-openssl to show what the preload does
 * (and does not do) for such a libcrypto.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <sys/uio.h>
#include <unistd.h>

int main(void)
{
	void *h = dlmopen(LM_ID_NEWLM, "libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlmopen: %s\n", dlerror());
		return 2;
	}
	void *(*secure_malloc)(size_t, const char *, int) =
		(void *(*)(size_t, const char *, int))dlsym(h, "CRYPTO_secure_malloc");
	if (!secure_malloc)
		return 3;
	void *p = secure_malloc(32, __FILE__, __LINE__);
	char buf[32];
	struct iovec local = { buf, 32 }, remote = { p, 32 };
	printf("%s\n", process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == 32 ? "readable" : "secret");
	return 0;
}

/* SPDX-License-Identifier: ISC */
/*
 * sandboxed_exit: allocates and frees secrets through whatever libcloak is
 * loaded (cloak_secret_* if libcloak.so is preloaded or linked; OpenSSL's
 * secure heap under the OpenSSL preload, found with dlsym so this program
 * needs neither), then confines itself as a sandboxed daemon does before it
 * exits: a seccomp filter (libseccomp) that allows write, exit and
 * exit_group and kills the process on any other system call. With
 * CLOAK_STATS=1, libcloak's statistics at exit must still be printed, by
 * that one write. Exit status 0, or death by SIGSYS. With --forbidden it
 * calls getppid once confined (the control: the filter does kill).
 */
#include <dlfcn.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	void *(*alloc)(size_t) = (void *(*)(size_t))dlsym(RTLD_DEFAULT, "cloak_secret_alloc");
	void (*release)(void *) = (void (*)(void *))dlsym(RTLD_DEFAULT, "cloak_secret_free");
	void *(*secure_alloc)(size_t, const char *, int) =
		(void *(*)(size_t, const char *, int))dlsym(RTLD_DEFAULT, "CRYPTO_secure_malloc");
	void (*secure_free)(void *, const char *, int) =
		(void (*)(void *, const char *, int))dlsym(RTLD_DEFAULT, "CRYPTO_secure_free");
	void *p = NULL;
	if (alloc && release)
		p = alloc(32);
	else if (secure_alloc && secure_free)
		p = secure_alloc(32, __FILE__, __LINE__);
	if (!p) {
		fprintf(stderr, "sandboxed_exit: no libcloak loaded, or no secret memory\n");
		return 2;
	}
	memset(p, 0x5a, 32);
	if (alloc && release)
		release(p);
	else
		secure_free(p, __FILE__, __LINE__);
	fflush(NULL); /* nothing left for stdio to write at exit */
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
	if (!ctx || seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(write), 0) ||
	    seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(exit), 0) ||
	    seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(exit_group), 0) || seccomp_load(ctx)) {
		fprintf(stderr, "sandboxed_exit: cannot install the seccomp filter\n");
		return 2;
	}
	if (argc > 1 && !strcmp(argv[1], "--forbidden"))
		syscall(SYS_getppid);
	exit(0); /* libcloak's destructor prints the statistics here */
}

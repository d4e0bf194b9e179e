/* Syscall allowlist; see sandbox.h. */
#include "sandbox.h"

#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

int sandbox_enter(char *err, size_t errlen)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
	if (!ctx) {
		snprintf(err, errlen, "cannot set up the seccomp sandbox");
		return -1;
	}
	static const int allowed[] = {
		/* vCPU, time, sleeping */
		SCMP_SYS(ioctl), SCMP_SYS(clock_gettime), SCMP_SYS(clock_nanosleep),
		SCMP_SYS(nanosleep), SCMP_SYS(epoll_wait), SCMP_SYS(epoll_pwait),
		SCMP_SYS(epoll_ctl), SCMP_SYS(rt_sigreturn), SCMP_SYS(rt_sigprocmask),
		SCMP_SYS(getrandom), SCMP_SYS(getpid), SCMP_SYS(gettid),
		/* I/O on descriptors opened before the sandbox */
		SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(readv), SCMP_SYS(writev),
		SCMP_SYS(pread64), SCMP_SYS(pwrite64), SCMP_SYS(preadv), SCMP_SYS(pwritev),
		SCMP_SYS(fdatasync), SCMP_SYS(fsync), SCMP_SYS(lseek), SCMP_SYS(fstat),
		SCMP_SYS(newfstatat), SCMP_SYS(close), SCMP_SYS(accept4), SCMP_SYS(recvfrom),
		SCMP_SYS(sendto), SCMP_SYS(recvmsg), SCMP_SYS(sendmsg), SCMP_SYS(shutdown),
		SCMP_SYS(getsockopt), SCMP_SYS(fcntl),
		/* memory: malloc, the wipe at exit (mincore), release */
		SCMP_SYS(brk), SCMP_SYS(munmap), SCMP_SYS(mincore), SCMP_SYS(madvise),
		SCMP_SYS(mremap), SCMP_SYS(futex),
		/* leaving */
		SCMP_SYS(exit), SCMP_SYS(exit_group), SCMP_SYS(tgkill),
		SCMP_SYS(rt_sigaction), SCMP_SYS(sigaltstack),
	};
	int r = 0;
	for (size_t i = 0; i < sizeof allowed / sizeof allowed[0] && r == 0; i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allowed[i], 0);
	/* mmap and mprotect, but never executable memory. */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1,
				     SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1,
				     SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	if (r == 0)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	if (r != 0) {
		snprintf(err, errlen, "cannot enter the seccomp sandbox: %s", strerror(-r));
		return -1;
	}
	return 0;
}

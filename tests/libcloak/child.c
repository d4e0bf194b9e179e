/* SPDX-License-Identifier: ISC */
/* Test helpers: scenarios in child processes; see child.h. */
#include "child.h"

#include "secretmem.h"

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

#include <errno.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

void scenario_dispatch(int argc, char **argv, const struct scenario *table)
{
	if (argc < 3 || strcmp(argv[1], "--scenario"))
		return;
	for (const struct scenario *s = table; s->name; s++)
		if (!strcmp(s->name, argv[2]))
			exit(s->run());
	fprintf(stderr, "unknown scenario %s\n", argv[2]);
	exit(127);
}

void run_scenario(const char *name, const char *const *env, const char *cores_in_dir,
                  struct child_result *r)
{
	int fds[2];
	memset(r, 0, sizeof *r);
	if (pipe(fds) != 0) {
		perror("pipe");
		exit(1);
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		close(fds[0]);
		close(fds[1]);
		for (const char *const *e = env; e && *e; e++)
			putenv((char *)*e);
		struct rlimit core = { 0, 0 };
		if (cores_in_dir) {
			core.rlim_cur = core.rlim_max = RLIM_INFINITY;
			if (chdir(cores_in_dir) != 0)
				_exit(126);
			prctl(PR_SET_DUMPABLE, 1);
		}
		setrlimit(RLIMIT_CORE, &core);
		char self[4096];
		ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
		if (n < 0)
			_exit(126);
		self[n] = 0;
		execl(self, self, "--scenario", name, (char *)NULL);
		_exit(126);
	}
	close(fds[1]);
	size_t len = 0;
	ssize_t n;
	while ((n = read(fds[0], r->out + len, sizeof r->out - 1 - len)) > 0)
		len += (size_t)n;
	r->out[len] = 0;
	close(fds[0]);
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	r->exited = WIFEXITED(status);
	r->code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	r->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

const struct child_result *expect_end(const char *name, const char *const *env, bool killed,
                                      int how, const char *out_has)
{
	static struct child_result r;
	run_scenario(name, env, NULL, &r);
	char with[512] = ""; /* the environment added, for the messages */
	for (const char *const *e = env; e && *e; e++)
		snprintf(with + strlen(with), sizeof with - strlen(with), " %s", *e);
	if (r.exited == killed || (killed ? r.signal : r.code) != how)
		fail_msg("%s%s: expected %s %d, got exit %d signal %d: %s", name, with,
		         killed ? "signal" : "exit", how, r.code, r.signal, r.out);
	if (out_has && !strstr(r.out, out_has))
		fail_msg("%s%s: expected \"%s\" in: %s", name, with, out_has, r.out);
	return &r;
}

static void on_fault(int sig)
{
	static const char msg[] = "caught a memory fault\n";
	ssize_t w = write(2, msg, sizeof msg - 1);
	(void)w;
	_exit(FAULT_EXIT);
}

void catch_faults(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_fault;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
}

bool skip_forbidden(void)
{
	const char *e = getenv("CLOAK_REQUIRE_KVM");
	return e && !strcmp(e, "1");
}

void require_secretmem_or_skip_all(void)
{
	if (secretmem_supported())
		return;
	if (skip_forbidden()) {
		printf("1..1\nnot ok 1 - memfd_secret is not available (errno %d) but "
		       "CLOAK_REQUIRE_KVM=1\n", errno);
		exit(1);
	}
	printf("1..0 # SKIP memfd_secret is not available on this kernel\n");
	exit(0);
}

bool limit_locked_memory(unsigned long bytes)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];
	if (syscall(SYS_capget, &hdr, data) != 0)
		return false;
	/* CAP_IPC_LOCK (14) lives in the first 32-bit word. */
	const uint32_t bit = 1u << CAP_IPC_LOCK;
	data[0].effective &= ~bit;
	data[0].permitted &= ~bit;
	data[0].inheritable &= ~bit;
	if (syscall(SYS_capset, &hdr, data) != 0)
		return false;
	struct rlimit rl = { bytes, bytes };
	if (setrlimit(RLIMIT_MEMLOCK, &rl) != 0)
		return false;
	struct memlock_info mi;
	memlock_query(&mi);
	return !mi.cap_ipc_lock && mi.soft == bytes;
}

bool locked_memory_available(unsigned long long bytes, char *why, size_t n)
{
	struct memlock_info mi;
	memlock_query(&mi);
	if (mi.cap_ipc_lock || mi.soft >= bytes)
		return true;
	if (mi.hard >= bytes) {
		struct rlimit rl = { (rlim_t)bytes, mi.hard == UINT64_MAX ? RLIM_INFINITY : (rlim_t)mi.hard };
		if (setrlimit(RLIMIT_MEMLOCK, &rl) == 0)
			return true;
	}
	snprintf(why, n, "needs %llu KiB of locked memory but RLIMIT_MEMLOCK allows %llu KiB "
	         "(hard limit); raise it (ulimit -l, or memlock in /etc/security/limits.conf) "
	         "or run as root", bytes >> 10, (unsigned long long)(mi.hard >> 10));
	return false;
}

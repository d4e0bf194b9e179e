/* SPDX-License-Identifier: ISC */
/* The path broker; see broker.h. */
#include "broker.h"

#include "fd_pass.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd_pass.h"
#include "sandbox.h"

#define BROKER_FD 3

struct broker_req {
	uint32_t index;
};
struct broker_reply {
	int32_t err; /* 0: a descriptor comes with it */
};

static void reply(int err, int fd)
{
	struct broker_reply r = { .err = err };
	fd_pass_send(BROKER_FD, &r, sizeof r, fd);
}

static _Noreturn void serve(const struct broker_path *paths, unsigned n)
{
	for (;;) {
		struct broker_req q;
		ssize_t got = recv(BROKER_FD, &q, sizeof q, 0);
		if (got < 0 && errno == EINTR)
			continue;
		if (got != (ssize_t)sizeof q)
			break; /* EOF: the monitor is gone */
		if (q.index >= n || paths[q.index].listen) {
			reply(EINVAL, -1);
			continue;
		}
		int s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (s < 0) {
			reply(errno, -1);
			continue;
		}
		if (connect(s, (const struct sockaddr *)&paths[q.index].addr,
			    sizeof paths[q.index].addr) == 0)
			reply(0, s);
		else
			reply(errno, -1);
		close(s);
	}
	/* Remove only what is still the monitor's own socket: a path someone
	 * else took over since is theirs. */
	for (unsigned i = 0; i < n; i++) {
		struct stat st;
		if (paths[i].listen && lstat(paths[i].addr.sun_path, &st) == 0 &&
		    S_ISSOCK(st.st_mode) && st.st_dev == paths[i].dev && st.st_ino == paths[i].ino)
			unlink(paths[i].addr.sun_path);
	}
	_exit(0);
}

int broker_start(struct broker *b, const struct broker_path *paths, unsigned n,
		 struct fail *f)
{
	b->fd = -1;
	b->pid = -1;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return fail_set(f, CLOAK_EXIT_INTERNAL, "socketpair: %s", strerror(errno));
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		close(sv[0]);
		close(sv[1]);
		return fail_set(f, CLOAK_EXIT_INTERNAL, "fork: %s", strerror(errno));
	}
	if (pid == 0) {
		/* Keep stdin/out/err and the pair; nothing else of the monitor's.
		 * Stop requests are the monitor's to answer: the broker outlives
		 * them (only to clean up after it) and still dies by SIGKILL. */
		if (dup2(sv[1], BROKER_FD) < 0 || close_range(BROKER_FD + 1, ~0u, 0) != 0)
			_exit(1);
		for (int s = 1; s < NSIG; s++)
			if (s != SIGKILL && s != SIGSTOP && s != SIGCHLD && s != SIGSEGV &&
			    s != SIGBUS && s != SIGILL && s != SIGFPE)
				signal(s, SIG_IGN);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (sandbox_enter_broker())
			_exit(1);
		serve(paths, n);
	}
	close(sv[1]);
	b->fd = sv[0];
	b->pid = pid;
	return 0;
}

int broker_connect(struct broker *b, unsigned index)
{
	if (b->fd < 0) {
		errno = ENOTCONN;
		return -1;
	}
	struct broker_req q = { .index = index };
	if (send(b->fd, &q, sizeof q, MSG_NOSIGNAL) != (ssize_t)sizeof q)
		return -1;
	struct broker_reply r;
	int fd;
	if (fd_pass_recv(b->fd, &r, sizeof r, &fd) != 0) {
		errno = EPIPE;
		return -1;
	}
	if (r.err || fd < 0) {
		if (fd >= 0)
			close(fd);
		errno = r.err ? r.err : EPROTO;
		return -1;
	}
	return fd;
}

void broker_stop(struct broker *b)
{
	if (b->fd >= 0)
		close(b->fd);
	b->fd = -1;
}

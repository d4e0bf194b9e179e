/* SPDX-License-Identifier: ISC */
/* The path broker; see broker.h. */
#include "broker.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cloak/abi.h"
#include "fd_pass.h"
#include "sandbox.h"

#define BROKER_FD 3
#define LISTEN_BACKLOG 4

struct broker_req {
	uint32_t index;
};
struct broker_reply {
	int32_t err; /* 0: a descriptor comes with it */
};
/* At start, one per listen path until one fails: a descriptor comes with
 * BROKER_LISTENING. */
struct broker_listen_reply {
	int32_t why; /* enum broker_listen_why */
	int32_t err;
};

/* The sockets this broker created: removed at the end if still these. */
struct made {
	bool made;
	dev_t dev;
	ino_t ino;
};

/* Whether nobody listens on this existing socket path: 0 when the socket
 * is stale (connect refused), else the errno that says it is in use
 * (EADDRINUSE: someone accepts; EAGAIN is a listener with a full backlog)
 * or that we cannot tell (EACCES: not ours to connect to). */
static int listener_check(const struct sockaddr_un *addr)
{
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s < 0)
		return errno;
	int r = connect(s, (const struct sockaddr *)addr, sizeof *addr);
	int e = r == 0 || errno == EAGAIN ? EADDRINUSE : errno == ECONNREFUSED ? 0 : errno;
	close(s);
	return e;
}

/* Creates the listening socket of one listen path: its descriptor, or -1
 * with *why and *err. A path that is not a socket, or a socket someone
 * listens on, is left as it is. */
static int listen_on(const struct broker_path *p, struct made *m, int32_t *why, int32_t *err)
{
	struct stat st;
	const char *path = p->addr.sun_path;
	*err = 0;
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			*why = BROKER_NOT_A_SOCKET;
			return -1;
		}
		int e = listener_check(&p->addr);
		if (e) {
			*why = e == EADDRINUSE ? BROKER_IN_USE : BROKER_UNSURE;
			*err = e;
			return -1;
		}
		unlink(path); /* a stale socket: nobody listens on it any more */
	}
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s < 0) {
		*why = BROKER_SOCKET;
		*err = errno;
		return -1;
	}
	/* Created owner-only, then given the mode asked for: never, even for
	 * a moment, more open than that. */
	mode_t old = umask(0077);
	int r = bind(s, (const struct sockaddr *)&p->addr, sizeof p->addr);
	*err = errno;
	umask(old);
	if (r) {
		*why = BROKER_BIND;
		close(s);
		return -1;
	}
	if (lstat(path, &st) == 0) { /* ours from here on, whatever follows */
		m->made = true;
		m->dev = st.st_dev;
		m->ino = st.st_ino;
	}
	if (!m->made || chmod(path, p->mode) || listen(s, LISTEN_BACKLOG)) {
		*why = BROKER_SETUP;
		*err = errno;
		close(s);
		return -1;
	}
	*why = BROKER_LISTENING;
	return s;
}

/* Before the sandbox: creates the listen paths' sockets in order and
 * passes each to the monitor, stopping at the first that fails. */
static void listen_all(const struct broker_path *paths, unsigned n, struct made *made)
{
	for (unsigned i = 0; i < n; i++) {
		if (!paths[i].listen)
			continue;
		struct broker_listen_reply r;
		int s = listen_on(&paths[i], &made[i], &r.why, &r.err);
		fd_pass_send(BROKER_FD, &r, sizeof r, s);
		if (s < 0)
			return;
		close(s); /* the monitor's now; the broker never accepts */
	}
}

/* Removes what this broker created, if it is still what it made: a path
 * someone else took over since is theirs. */
static void remove_made(const struct broker_path *paths, unsigned n, const struct made *made)
{
	for (unsigned i = 0; i < n; i++) {
		struct stat st;
		if (made[i].made && lstat(paths[i].addr.sun_path, &st) == 0 &&
		    S_ISSOCK(st.st_mode) && st.st_dev == made[i].dev && st.st_ino == made[i].ino)
			unlink(paths[i].addr.sun_path);
	}
}

static void reply(int err, int fd)
{
	struct broker_reply r = { .err = err };
	fd_pass_send(BROKER_FD, &r, sizeof r, fd);
}

static _Noreturn void serve(const struct broker_path *paths, unsigned n, const struct made *made)
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
	remove_made(paths, n, made);
	_exit(0);
}

/* The monitor's side of listen_all(). */
static int take_listeners(struct broker *b, const struct broker_path *paths, unsigned n,
			  struct broker_listener *out, struct fail *f)
{
	for (unsigned i = 0; i < n; i++)
		out[i] = (struct broker_listener){ .fd = -1, .why = BROKER_NOT_TRIED };
	for (unsigned i = 0; i < n; i++) {
		if (!paths[i].listen)
			continue;
		struct broker_listen_reply r;
		int fd;
		if (fd_pass_recv(b->fd, &r, sizeof r, &fd) != 0)
			return fail_set(f, CLOAK_EXIT_INTERNAL, "the path broker ended before "
					"creating the listening sockets");
		if ((r.why == BROKER_LISTENING) != (fd >= 0) || r.why < BROKER_LISTENING ||
		    r.why >= BROKER_NOT_TRIED) {
			if (fd >= 0)
				close(fd);
			return fail_set(f, CLOAK_EXIT_INTERNAL, "the path broker's answer "
					"for a listening socket is malformed");
		}
		out[i] = (struct broker_listener){ .fd = fd, .why = r.why, .err = r.err };
		if (fd < 0)
			break;
	}
	return 0;
}

int broker_start(struct broker *b, const struct broker_path *paths, unsigned n,
		 struct broker_listener *out, struct fail *f)
{
	b->fd = -1;
	b->pid = -1;
	if (n > CLOAK_CHAN_MAX)
		return fail_set(f, CLOAK_EXIT_INTERNAL, "the path broker takes at most %u paths",
				CLOAK_CHAN_MAX);
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
		struct made made[CLOAK_CHAN_MAX] = { { 0 } };
		listen_all(paths, n, made);
		if (sandbox_enter_broker()) {
			remove_made(paths, n, made);
			_exit(1);
		}
		serve(paths, n, made);
	}
	close(sv[1]);
	b->fd = sv[0];
	b->pid = pid;
	return take_listeners(b, paths, n, out, f);
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

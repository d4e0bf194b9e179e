/* SPDX-License-Identifier: ISC */
/*
 * The path broker: a small child process, forked before the sandbox, that
 * does for the monitor the path operations the sandbox forbids it. It
 * creates the listen: channels' sockets, first thing, and passes them to
 * the monitor: so no moment exists at which a socket file is there and
 * the broker that will remove it is not. It connects a connect: channel
 * again (a peer that restarted). And it removes the sockets it created,
 * once the monitor is gone (however it ended, SIGKILL included) and if
 * each is still the one it made. The monitor can only ask for
 * the paths given on its command line, by index; the broker holds no guest
 * memory, no KVM descriptor and nothing else of the monitor's, and runs in
 * a sandbox of its own.
 */
#ifndef CLOAK_PROCESS_BROKER_H
#define CLOAK_PROCESS_BROKER_H

#include <stdbool.h>
#include <sys/types.h>
#include <sys/un.h>

#include "fail.h"

struct broker_path {
	struct sockaddr_un addr;
	bool listen;        /* the broker creates this socket, removes it at the end */
	mode_t mode;        /* listen: the socket file's permissions */
};

/* What became of a listen path: its listening socket, or why there is
 * none (the errno of the step that failed in err). */
enum broker_listen_why {
	BROKER_LISTENING,
	BROKER_NOT_A_SOCKET, /* the path exists and is something else */
	BROKER_IN_USE,	     /* another process listens on it */
	BROKER_UNSURE,	     /* a socket we cannot connect to to tell (err) */
	BROKER_SOCKET,	     /* socket() failed */
	BROKER_BIND,	     /* bind() failed */
	BROKER_SETUP,	     /* chmod(), listen() or lstat() failed */
	BROKER_NOT_TRIED,    /* an earlier listen path failed first */
};
struct broker_listener {
	int fd; /* the listening socket (non-blocking, close-on-exec), or -1 */
	enum broker_listen_why why;
	int err;
};

struct broker {
	int fd;   /* the monitor's end of the socket pair, -1 when none */
	pid_t pid;
};

/* Forks the broker with these paths (at most CLOAK_CHAN_MAX). It creates
 * the listen paths' sockets in order, stopping at the first that fails;
 * out[i] says what became of path i (for a connect path: fd -1,
 * BROKER_NOT_TRIED). 0 once the broker answered for every listen path,
 * whatever it answered; -1 and f if it could not start or answer. Call
 * before the sandbox. */
int broker_start(struct broker *b, const struct broker_path *paths, unsigned n,
		 struct broker_listener *out, struct fail *f);
/* A new, non-blocking connection to connect path `index`: the descriptor,
 * or -1 with errno (ECONNREFUSED, ENOENT, ... from the broker's connect). */
int broker_connect(struct broker *b, unsigned index);
/* Ends the monitor's side: the broker then removes the listening sockets
 * it created that are still the ones it made, and exits. */
void broker_stop(struct broker *b);

#endif

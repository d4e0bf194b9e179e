/* SPDX-License-Identifier: ISC */
/*
 * The path broker: a small child process, forked before the sandbox, that
 * does for the monitor the two path operations the sandbox forbids it:
 * connecting a connect: channel again (a peer that restarted), and
 * removing the listening sockets the monitor created, once the monitor is
 * gone (however it ended, SIGKILL included). The monitor can only ask for
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
	bool listen;        /* a socket the monitor bound: remove at the end */
	dev_t dev;          /* ...if it is still this one (listen only) */
	ino_t ino;
};

struct broker {
	int fd;   /* the monitor's end of the socket pair, -1 when none */
	pid_t pid;
};

/* Forks the broker with these paths. Call before the sandbox. */
int broker_start(struct broker *b, const struct broker_path *paths, unsigned n,
		 struct fail *f);
/* A new, non-blocking connection to connect path `index`: the descriptor,
 * or -1 with errno (ECONNREFUSED, ENOENT, ... from the broker's connect). */
int broker_connect(struct broker *b, unsigned index);
/* Ends the monitor's side: the broker then removes the listening sockets
 * that are still the monitor's, and exits. */
void broker_stop(struct broker *b);

#endif

/* SPDX-License-Identifier: ISC */
/*
 * Channels: reliable byte streams between the guest and host Unix sockets.
 * Sockets are non-blocking: a read with nothing buffered or a write into a
 * full socket answers -CLOAK_EAGAIN at once and the guest waits in POLL
 * (waitset.h), which is how backpressure reaches the guest.
 *
 * A peer that closes its sending side (shutdown(SHUT_WR)) still gets the
 * guest's replies: reads answer -CLOAK_EPIPE once its data is consumed,
 * writes go on until the peer is gone altogether. A listen: channel that
 * the guest opens again after its peer left waits for the next one; a
 * connect: channel opened again after its peer left connects again
 * (through the path broker, process/broker.h).
 *
 * An fd: channel is a listen: channel whose listening socket the monitor
 * was given, open, by whoever started it (systemd's socket activation
 * passes it as descriptor 3): the monitor checks what it is, never
 * creates or removes a socket file for it, and leaves the socket to its
 * owner at exit (closing only its own copy).
 */
#ifndef CLOAK_DEVICE_CHANNEL_H
#define CLOAK_DEVICE_CHANNEL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "cloak/abi.h"
#include "fail.h"
#include "mem/guestmem.h"

struct broker;
struct broker_listener;

enum chan_mode { CHAN_LISTEN, CHAN_CONNECT };

struct channel {
	char name[CLOAK_NAME_MAX];
	struct sockaddr_un addr;
	enum chan_mode mode;
	mode_t socket_mode; /* listen: the socket file's permissions */
	unsigned index;     /* in the registry (and the broker's path list) */
	int listen_fd;      /* listen: made by the path broker at start-up, else -1 */
	int given_fd;       /* fd:N: N, the listening socket it was started with; else -1 */
	int fd;             /* the connection, -1 until there is one */
	uint32_t conn_gen;  /* changes whenever fd is closed or replaced */
	bool opened;        /* the guest has opened it */
	bool read_eof;      /* the peer sent EOF: reads answer EPIPE */
	bool peer_gone;     /* reset, closed, or unreachable: both ways EPIPE */
	bool want_write;    /* the last write hit a full socket */
	uint64_t bytes_in, bytes_out;
};

/* NAME=listen:PATH[,mode=OCTAL], NAME=connect:PATH or NAME=fd:N;
 * CLOAK_EXIT_USAGE. */
int channel_parse(const char *spec, struct channel *out, struct fail *f);
/* fd:N: takes descriptor N as the channel's listening socket if it is a
 * listening Unix stream socket (made non-blocking and close-on-exec);
 * else CLOAK_EXIT_RESOURCE saying what it is instead. */
int channel_take_given(struct channel *c, struct fail *f);
/* Listen: takes the listening socket the path broker created for it
 * (process/broker.h; owner-only unless mode= said otherwise), or says why
 * there is none: CLOAK_EXIT_RESOURCE for a path that is not a socket, a
 * socket another process listens on (both left untouched) or a failed
 * bind. */
int channel_take_listener(struct channel *c, const struct broker_listener *l, struct fail *f);
/* Connect: the first connection, made at start-up. No peer is not an
 * error: the guest's open then answers -CLOAK_EPIPE. */
void channel_connect_first(struct channel *c);
void channel_close(struct channel *c);

/* The guest opens the channel: 0 or -CLOAK_EPIPE (no peer to reach). */
int64_t channel_open(struct channel *c, struct broker *b);
/* CLOAK_CHAN_READ or WRITE of guest [buf, buf+len): bytes moved or a
 * negative CLOAK_E* code. CLOAK_CHAN_HANGUP (buf and len 0) closes the
 * current connection: the peer reads EOF, the guest EPIPE until it opens
 * the channel again. */
int64_t channel_io(struct channel *c, struct guestmem *gm, uint64_t op, gpa_t buf,
		   uint64_t len);

/* For POLL: ready now without waiting (1), or the descriptor and epoll
 * events to wait for (0; *fd -1 when there is nothing to wait on). */
int channel_wait_for(const struct channel *c, int *fd, uint32_t *events);

#endif

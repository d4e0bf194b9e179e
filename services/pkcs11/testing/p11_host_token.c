/* SPDX-License-Identifier: ISC */
/*
 * A test fixture, never installed: the token's request handler
 * (p11_token.c and the modules it calls, built for the host as the unit
 * tests build them) served on a Unix socket, so that the module and the
 * programs that load it (pkcs11-tool, p11tool, OpenSSL's engine, PyKCS11,
 * Java's SunPKCS11) can be tested against the token's handler where no
 * KVM runs guests. It speaks the guest's protocol (p11_wire.h): frames in,
 * one reply frame per request. It is not the token: nothing here is
 * protected, and it keeps its objects in memory only. The suites that
 * check what the guest protects boot the guest.
 *
 *   p11_host_token SOCKET     serves until SIGTERM; prints "ready" once
 *                             it listens
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "p11_token.h"

#define CLIENTS 64

static bool seed(void *ctx, br_hmac_drbg_context *d)
{
	uint8_t s[48];
	if (getrandom(s, sizeof s, 0) != sizeof s)
		return false;
	br_hmac_drbg_init(d, &br_sha256_vtable, s, sizeof s);
	return true;
}

static const struct p11_env env = { seed, NULL, NULL };
static struct p11_token token;
static uint8_t reply[4 + P11_BODY_MAX];

struct client {
	int fd;
	size_t have;
	uint8_t buf[4 + P11_BODY_MAX];
};
static struct client clients[CLIENTS];

static void drop(struct client *c)
{
	close(c->fd);
	c->fd = -1;
	c->have = 0;
}

/* Serves every whole frame the client's buffer holds; false if the
 * client must go (a bad frame, a write that failed). */
static bool serve(struct client *c)
{
	while (c->have >= 4) {
		uint32_t len = p11_frame_len(c->buf);
		if (!len)
			return false;
		if (c->have < 4 + (size_t)len)
			return true;
		size_t n = p11_token_handle(&token, c->buf + 4, len, reply + 4);
		c->have -= 4 + (size_t)len;
		memmove(c->buf, c->buf + 4 + len, c->have);
		if (!n)
			return false;
		wire_frame_hdr(reply, (uint32_t)n);
		for (size_t done = 0; done < 4 + n;) {
			ssize_t w = send(c->fd, reply + done, 4 + n - done, MSG_NOSIGNAL);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				return false;
			done += (size_t)w;
		}
	}
	return true;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: p11_host_token SOCKET\n");
		return 2;
	}
	uint8_t id[P11_SERIAL / 2], serial[P11_SERIAL];
	if (getrandom(id, sizeof id, 0) != sizeof id)
		return 1;
	p11_serial_of(id, serial);
	p11_token_init(&token, &env, serial);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	if (strlen(argv[1]) >= sizeof a.sun_path)
		return 2;
	strcpy(a.sun_path, argv[1]);
	int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	unlink(argv[1]);
	if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 16)) {
		perror("p11_host_token");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	for (int i = 0; i < CLIENTS; i++)
		clients[i].fd = -1;
	printf("p11_host_token: ready\n");
	fflush(stdout);
	for (;;) {
		struct pollfd p[1 + CLIENTS];
		int map[1 + CLIENTS], n = 1;
		p[0] = (struct pollfd){ ls, POLLIN, 0 };
		for (int i = 0; i < CLIENTS; i++)
			if (clients[i].fd >= 0) {
				p[n] = (struct pollfd){ clients[i].fd, POLLIN, 0 };
				map[n++] = i;
			}
		if (poll(p, (nfds_t)n, -1) < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		if (p[0].revents & POLLIN) {
			int fd = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
			int i = 0;
			while (i < CLIENTS && clients[i].fd >= 0)
				i++;
			if (fd >= 0 && i < CLIENTS)
				clients[i].fd = fd;
			else if (fd >= 0)
				close(fd);
		}
		for (int k = 1; k < n; k++) {
			struct client *c = &clients[map[k]];
			if (!p[k].revents)
				continue;
			ssize_t r = recv(c->fd, c->buf + c->have, sizeof c->buf - c->have, 0);
			if (r <= 0 || (c->have += (size_t)r, !serve(c)))
				drop(c);
		}
	}
}

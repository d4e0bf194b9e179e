/* SPDX-License-Identifier: ISC */
/* Calls to the token over its socket, on a connection kept between
 * calls: see rpc.h. */
#include "rpc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

/* A key generation or signature under KVM's instruction emulator takes
 * seconds; a token that does not answer in this time is gone. */
#define REPLY_SECONDS 300

static uint8_t req[4 + P11_BODY_MAX], rep[P11_BODY_MAX];
static int conn = -1; /* kept for the next call */
static pid_t conn_pid; /* the process that made it: a child's copy is not its own */

static void debug(const char *what, int err)
{
	if (getenv("CLOAK_PKCS11_DEBUG"))
		fprintf(stderr, "libcloak-pkcs11: %s%s%s\n", what, err ? ": " : "", err ? strerror(err) : "");
}

void rpc_begin(struct rpc *c, enum p11_op op, const uint8_t app[P11_APP_ID])
{
	c->op = op;
	wire_writer_init(&c->w, req + 4, P11_BODY_MAX);
	p11_put_request(&c->w, op, app);
	wire_reader_init(&c->r, rep, 0);
	c->replied = 0;
}

static int connect_to(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	if (!path || strlen(path) >= sizeof a.sun_path) {
		debug(path ? "socket path too long" : "CLOAK_PKCS11_SOCKET is not set, nor XDG_RUNTIME_DIR", 0);
		return -1;
	}
	strcpy(a.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct timeval tv = { REPLY_SECONDS, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	if (connect(fd, (struct sockaddr *)&a, sizeof a)) {
		debug("cannot connect to the token's socket", errno);
		close(fd);
		return -1;
	}
	return fd;
}

/* Sends or receives n bytes: n, or what went before the peer left (*err
 * 0) or an error (*err its errno; a line under CLOAK_PKCS11_DEBUG). */
static size_t io_all(int fd, uint8_t *p, size_t n, bool out, int *err)
{
	size_t done = 0;
	while (done < n) {
		ssize_t r = out ? send(fd, p + done, n - done, MSG_NOSIGNAL) : recv(fd, p + done, n - done, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			*err = r ? errno : 0;
			debug(out ? "cannot send to the token" : "no reply from the token", *err);
			break;
		}
		done += (size_t)r;
	}
	return done;
}

void rpc_disconnect(void)
{
	if (conn >= 0)
		close(conn);
	conn = -1;
}

enum exchange { DONE, GONE, FAILED };

/* One request out and one reply frame in on fd (its length in *len).
 * GONE: the token hung up before a byte of the reply (the request was
 * not served: the token ends a kept connection only between frames). */
static enum exchange exchange(int fd, size_t reqlen, uint32_t *len)
{
	uint8_t hdr[4];
	int err = 0;
	if (io_all(fd, req, reqlen, true, &err) != reqlen)
		return err == EPIPE || err == ECONNRESET ? GONE : FAILED;
	size_t got = io_all(fd, hdr, 4, false, &err);
	if (got != 4)
		return !got && (err == 0 || err == ECONNRESET) ? GONE : FAILED;
	*len = p11_frame_len(hdr);
	return *len && io_all(fd, rep, *len, false, &err) == *len ? DONE : FAILED;
}

CK_RV rpc_call(struct rpc *c, const char *sock)
{
	if (c->w.bad)
		return CKR_ARGUMENTS_BAD;
	if (conn >= 0 && conn_pid != getpid()) { /* inherited over fork() */
		close(conn);
		conn = -1;
	}
	wire_frame_hdr(req, (uint32_t)c->w.len);
	uint32_t len = 0;
	for (;;) {
		bool kept = conn >= 0;
		if (!kept) {
			if ((conn = connect_to(sock)) < 0)
				return CKR_DEVICE_ERROR;
			conn_pid = getpid();
		}
		enum exchange e = exchange(conn, 4 + c->w.len, &len);
		if (e == DONE)
			break;
		rpc_disconnect();
		/* A kept connection the token ended while idle: once more on a
		 * new one. A new one that fails is the token's failure. */
		if (e == FAILED || !kept)
			return CKR_DEVICE_ERROR;
	}
	wire_reader_init(&c->r, rep, len);
	c->replied = len;
	uint8_t version = wire_get_u8(&c->r), op = wire_get_u8(&c->r);
	CK_RV rv = wire_get_u64(&c->r);
	if (c->r.bad || version != P11_VERSION || op != c->op) {
		debug("malformed reply from the token", 0);
		rpc_disconnect(); /* its frames may be out of step */
		return CKR_DEVICE_ERROR;
	}
	return rv;
}

CK_RV rpc_end(struct rpc *c, CK_RV rv)
{
	if (!wire_done(&c->r)) {
		debug("reply with unexpected contents", 0);
		return CKR_DEVICE_ERROR;
	}
	return rv;
}

void rpc_wipe(struct rpc *c)
{
	explicit_bzero(req, 4 + c->w.len);
	explicit_bzero(rep, c->replied);
}

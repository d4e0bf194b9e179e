/* SPDX-License-Identifier: ISC */
/* Channels; see channel.h. */
#include "channel.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "process/broker.h"
#include "spec.h"

static int parse_mode(const char *spec, const char *opt, size_t len, mode_t *mode,
		      struct fail *f)
{
	char *end;
	char buf[16];
	if (len <= 5 || len - 5 >= sizeof buf)
		goto bad;
	memcpy(buf, opt + 5, len - 5);
	buf[len - 5] = '\0';
	errno = 0;
	unsigned long v = strtoul(buf, &end, 8);
	if (errno || *end || v > 0777)
		goto bad;
	*mode = (mode_t)v;
	return 0;
bad:
	return fail_set(f, CLOAK_EXIT_USAGE, "--channel '%s': mode= takes octal permissions "
			"such as 0600 or 0660", spec);
}

/* fd:N, N a decimal descriptor from 3 up (0-2 are the monitor's standard
 * streams), nothing after it. */
static int parse_given(const char *spec, const char *num, struct channel *c, struct fail *f)
{
	char *end;
	errno = 0;
	long n = *num >= '0' && *num <= '9' ? strtol(num, &end, 10) : -1;
	if (n >= 0 && *end == ',')
		return fail_set(f, CLOAK_EXIT_USAGE, "--channel '%s': fd: takes no options (its "
				"owner made the socket and set its mode)", spec);
	if (n < 0 || errno || *end || n > INT_MAX)
		return fail_set(f, CLOAK_EXIT_USAGE, "--channel '%s': fd: takes a descriptor "
				"number, such as fd:3 (systemd's first socket)", spec);
	if (n < 3)
		return fail_set(f, CLOAK_EXIT_USAGE, "--channel '%s': descriptors 0-2 are the "
				"monitor's standard streams; a socket passed to it is 3 or above",
				spec);
	c->mode = CHAN_LISTEN;
	c->given_fd = (int)n;
	return 0;
}

int channel_parse(const char *spec, struct channel *c, struct fail *f)
{
	const char *rest, *path;
	memset(c, 0, sizeof *c);
	c->fd = c->listen_fd = c->given_fd = -1;
	c->socket_mode = 0600;
	if (spec_name(spec, "--channel", c->name, &rest, f))
		return -1;
	if (!strncmp(rest, "fd:", 3))
		return parse_given(spec, rest + 3, c, f);
	if (!strncmp(rest, "listen:", 7)) {
		c->mode = CHAN_LISTEN;
		path = rest + 7;
	} else if (!strncmp(rest, "connect:", 8)) {
		c->mode = CHAN_CONNECT;
		path = rest + 8;
	} else {
		return fail_set(f, CLOAK_EXIT_USAGE, "--channel '%s': expected NAME=listen:PATH"
				"[,mode=0600], NAME=connect:PATH or NAME=fd:N", spec);
	}
	const char *comma = strchr(path, ',');
	size_t plen = comma ? (size_t)(comma - path) : strlen(path);
	if (plen == 0 || plen >= sizeof c->addr.sun_path)
		return fail_set(f, CLOAK_EXIT_USAGE, "--channel '%s': the socket path must have "
				"1-%zu characters (and no comma)", spec,
				sizeof c->addr.sun_path - 1);
	c->addr.sun_family = AF_UNIX;
	memcpy(c->addr.sun_path, path, plen);
	const char *opts = comma ? comma + 1 : NULL, *opt;
	size_t olen;
	while (spec_next_option(&opts, &opt, &olen)) {
		if (c->mode == CHAN_LISTEN && olen > 5 && !strncmp(opt, "mode=", 5)) {
			if (parse_mode(spec, opt, olen, &c->socket_mode, f))
				return -1;
		} else {
			return fail_set(f, CLOAK_EXIT_USAGE, "--channel '%s': unknown option '%.*s'%s",
					spec, (int)olen, opt,
					c->mode == CHAN_LISTEN ? " (known: mode=OCTAL)" : "");
		}
	}
	return 0;
}

int channel_take_listener(struct channel *c, const struct broker_listener *l, struct fail *f)
{
	const char *p = c->addr.sun_path;
	const char *e = strerror(l->err);
	switch (l->why) {
	case BROKER_LISTENING:
		c->listen_fd = l->fd;
		return 0;
	case BROKER_NOT_A_SOCKET:
		return fail_set(f, CLOAK_EXIT_RESOURCE, "--channel %s: %s exists and is not "
				"a socket: remove it or choose another path", c->name, p);
	case BROKER_IN_USE:
		return fail_set(f, CLOAK_EXIT_RESOURCE, "--channel %s: another process is "
				"listening on %s: choose another path", c->name, p);
	case BROKER_UNSURE:
		return fail_set(f, CLOAK_EXIT_RESOURCE, "--channel %s: cannot tell whether "
				"another process listens on %s (%s): remove it or choose "
				"another path", c->name, p, e);
	case BROKER_SOCKET:
		return fail_set(f, CLOAK_EXIT_INTERNAL, "socket: %s", e);
	case BROKER_BIND:
		return fail_set(f, CLOAK_EXIT_RESOURCE, "--channel %s: cannot listen on %s: %s%s",
				c->name, p, e,
				l->err == ENOENT ? " (the directory does not exist)" : "");
	case BROKER_SETUP:
		return fail_set(f, CLOAK_EXIT_RESOURCE, "--channel %s: cannot listen on %s: %s",
				c->name, p, e);
	case BROKER_NOT_TRIED:
		break;
	}
	return fail_set(f, CLOAK_EXIT_INTERNAL, "--channel %s: no listening socket for %s",
			c->name, p);
}

int channel_take_given(struct channel *c, struct fail *f)
{
	int fd = c->given_fd, v[3];
	socklen_t len = sizeof v[0];
	struct stat st;
	const char *what = NULL;
	if (fstat(fd, &st) != 0)
		what = errno == EBADF ? "not open" : "not usable";
	else if (!S_ISSOCK(st.st_mode))
		what = "not a socket";
	else if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v[0], &len) || v[0] != AF_UNIX)
		what = "not a Unix socket";
	else if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &v[1], &len) || v[1] != SOCK_STREAM)
		what = "not a stream socket";
	else if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v[2], &len) || !v[2])
		what = "not listening";
	if (what)
		return fail_set(f, CLOAK_EXIT_RESOURCE, "--channel %s: descriptor %d is %s: "
				"fd: takes a listening Unix stream socket (systemd: a .socket "
				"unit's ListenStream= with a path)", c->name, fd, what);
	/* The channel waits for connections in POLL, never in accept(). */
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) || fcntl(fd, F_SETFD, FD_CLOEXEC))
		return fail_set(f, CLOAK_EXIT_RESOURCE, "--channel %s: descriptor %d: %s", c->name,
				fd, strerror(errno));
	c->listen_fd = fd;
	return 0;
}

static void set_connection(struct channel *c, int fd)
{
	c->conn_gen++;
	c->fd = fd;
	c->peer_gone = fd < 0;
	c->read_eof = false;
	c->want_write = false;
}

void channel_connect_first(struct channel *c)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	/* A Unix-socket connect completes at once or fails (EAGAIN means the
	 * listener's backlog is full): either way there is no peer now. */
	if (fd >= 0 && connect(fd, (struct sockaddr *)&c->addr, sizeof c->addr) != 0) {
		close(fd);
		fd = -1;
	}
	set_connection(c, fd);
}

static void drop(struct channel *c)
{
	if (c->fd >= 0)
		close(c->fd); /* closing removes it from the epoll set */
	c->conn_gen++;
	c->fd = -1;
	c->peer_gone = true;
	c->read_eof = false;
	c->want_write = false;
}

void channel_close(struct channel *c)
{
	if (c->fd >= 0)
		close(c->fd);
	if (c->listen_fd >= 0)
		close(c->listen_fd);
	c->fd = c->listen_fd = -1;
}

int64_t channel_open(struct channel *c, struct broker *b)
{
	c->opened = true;
	bool finished = c->peer_gone || c->read_eof;
	if (c->mode == CHAN_LISTEN) {
		/* Opening again after the peer left (or said it is done) waits
		 * for the next connection. */
		if (finished)
			drop(c);
		c->peer_gone = false;
		return 0;
	}
	if (c->fd >= 0 && !finished)
		return 0;
	if (c->fd >= 0)
		drop(c);
	int fd = broker_connect(b, c->index);
	set_connection(c, fd);
	return fd >= 0 ? 0 : -CLOAK_EPIPE;
}

/* A listen: channel without a connection accepts a pending one. */
static bool connected(struct channel *c)
{
	if (c->fd >= 0)
		return true;
	if (c->mode != CHAN_LISTEN || c->peer_gone)
		return false;
	int fd = accept4(c->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return false; /* nobody yet: EAGAIN for the guest */
	set_connection(c, fd);
	return true;
}

int64_t channel_io(struct channel *c, struct guestmem *gm, uint64_t op, gpa_t buf,
		   uint64_t len)
{
	if (op == CLOAK_CHAN_HANGUP) {
		/* The guest ends this connection (e.g. a client that broke its
		 * protocol); a listen: channel opened again waits for the next. */
		if (buf.v || len)
			return -CLOAK_EINVAL;
		if (c->fd >= 0)
			drop(c);
		return 0;
	}
	if (op != CLOAK_CHAN_READ && op != CLOAK_CHAN_WRITE)
		return -CLOAK_EINVAL;
	if (len > CLOAK_CHAN_IO_MAX)
		return -CLOAK_E2BIG;
	enum gm_status s = gm_check(gm, buf, len);
	if (s != GM_OK)
		return gm_status_abi(s);
	if (c->peer_gone || (op == CLOAK_CHAN_READ && c->read_eof))
		return -CLOAK_EPIPE;
	if (!connected(c))
		return c->peer_gone ? -CLOAK_EPIPE : -CLOAK_EAGAIN;
	if (len == 0)
		return 0;
	for (;;) {
		uint64_t n;
		s = op == CLOAK_CHAN_READ ? gm_read_fd(gm, c->fd, buf, len, &n)
					  : gm_write_fd(gm, c->fd, buf, len, &n);
		if (s == GM_OK && n > 0) {
			if (op == CLOAK_CHAN_READ) {
				c->bytes_in += n;
			} else {
				c->bytes_out += n;
				c->want_write = false;
			}
			return (int64_t)n;
		}
		if (s == GM_OK && op == CLOAK_CHAN_READ) {
			c->read_eof = true; /* the peer may still read our replies */
			return -CLOAK_EPIPE;
		}
		if (s == GM_EIO && errno == EINTR)
			continue;
		if (s == GM_EIO && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (op == CLOAK_CHAN_WRITE)
				c->want_write = true;
			return -CLOAK_EAGAIN;
		}
		if (s != GM_OK && s != GM_EIO)
			return gm_status_abi(s);
		drop(c); /* EPIPE, ECONNRESET, a write of 0: the peer is gone */
		return -CLOAK_EPIPE;
	}
}

int channel_wait_for(const struct channel *c, int *fd, uint32_t *events)
{
	*fd = -1;
	*events = 0;
	/* The next call answers at once: EPIPE, or (connect:) a new connect. */
	if (c->peer_gone || (c->fd < 0 && c->mode == CHAN_CONNECT))
		return 1;
	if (c->fd < 0) { /* listen: a connection to accept */
		*fd = c->listen_fd;
		*events = EPOLLIN;
		return 0;
	}
	/* After a write answered EAGAIN the bit means "writable"; otherwise
	 * input, EOF or hang-up. A half-closed peer is readable at once (its
	 * EOF), except for a guest waiting to write its reply. */
	if (c->read_eof && !c->want_write)
		return 1;
	*fd = c->fd;
	*events = (c->read_eof ? 0 : EPOLLIN | EPOLLRDHUP) | (c->want_write ? EPOLLOUT : 0);
	return 0;
}

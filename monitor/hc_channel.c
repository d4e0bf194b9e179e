/*
 * CHAN_OPEN and CHAN_IO: byte streams between the guest and host Unix
 * sockets. Sockets are non-blocking: a read with nothing buffered or a
 * write into a full socket answers -CLOAK_EAGAIN at once and the guest
 * waits in POLL (devices_poll) instead of the monitor blocking, which is
 * how backpressure reaches the guest; the guest's own pace limits how fast
 * the monitor reads from the host. A peer that hung up, reset, or could
 * not be reached is -CLOAK_EPIPE.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "devices.h"
#include "hypercall.h"

void channel_drop(struct vm *vm, struct channel *ch)
{
	if (ch->fd >= 0) {
		close(ch->fd); /* closing removes it from the epoll set */
		if (ch->watched_fd == ch->fd)
			ch->watched = 0;
		ch->fd = -1;
	}
	ch->peer_gone = true;
	ch->want_write = false;
	vm_verbose(vm, "channel '%s': peer disconnected", ch->name);
}

void channel_connect(struct vm *vm, struct channel *ch)
{
	ch->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ch->fd >= 0 && connect(ch->fd, (struct sockaddr *)&ch->addr, sizeof ch->addr) == 0)
		return;
	/* A Unix-socket connect completes at once or fails (EAGAIN means the
	 * listener's backlog is full): either way there is no peer. */
	vm_verbose(vm, "channel '%s': cannot connect to %s: %s", ch->name, ch->addr.sun_path,
		   strerror(errno));
	if (ch->fd >= 0)
		close(ch->fd);
	ch->fd = -1;
	ch->peer_gone = true;
}

bool channel_try_connect(struct vm *vm, struct channel *ch)
{
	if (ch->fd >= 0)
		return true;
	if (ch->mode != CHAN_LISTEN)
		return false; /* connect: channels connect once, at start-up */
	ch->fd = accept4(ch->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (ch->fd < 0)
		return false; /* nobody yet: EAGAIN for the guest */
	vm_verbose(vm, "channel '%s': peer connected", ch->name);
	return true;
}

static int hc_chan_open(struct vm *vm, void *args)
{
	struct cloak_hc_chan_open *a = args;
	a->name[CLOAK_NAME_MAX - 1] = '\0';
	a->handle = 0;
	a->ret = -CLOAK_ENOENT;
	if (!vm->dev)
		return 0;
	for (unsigned i = 0; i < vm->dev->nchan; i++) {
		struct channel *ch = &vm->dev->chan[i];
		if (strcmp(ch->name, a->name))
			continue;
		/* Opening a listening channel again after its peer left waits
		 * for the next connection. A connect: channel connects once,
		 * at start-up (the sandbox forbids new sockets later). */
		if (ch->mode == CHAN_LISTEN)
			ch->peer_gone = false;
		ch->opened = true;
		a->handle = i;
		a->ret = ch->peer_gone ? -CLOAK_EPIPE : 0;
		break;
	}
	return 0;
}

static int64_t chan_io(struct vm *vm, struct channel *ch, const struct cloak_hc_chan_io *a)
{
	if (a->op == CLOAK_CHAN_HANGUP) {
		/* The guest ends this connection (e.g. a client that broke the
		 * protocol); a listen: channel opened again waits for the next. */
		if (a->buf || a->len)
			return -CLOAK_EINVAL;
		if (ch->fd >= 0)
			channel_drop(vm, ch);
		return 0;
	}
	if (a->op != CLOAK_CHAN_READ && a->op != CLOAK_CHAN_WRITE)
		return -CLOAK_EINVAL;
	if (a->len > CLOAK_CHAN_IO_MAX)
		return -CLOAK_E2BIG;
	enum gm_status s = gm_check(vm->gm, gpa(a->buf), a->len);
	if (s != GM_OK)
		return s == GM_EACCES ? -CLOAK_EACCES : -CLOAK_EFAULT;
	if (ch->peer_gone)
		return -CLOAK_EPIPE;
	if (!channel_try_connect(vm, ch))
		return ch->peer_gone ? -CLOAK_EPIPE : -CLOAK_EAGAIN;
	if (a->len == 0)
		return 0;
	for (;;) {
		int64_t n = a->op == CLOAK_CHAN_READ ? gm_read_fd(vm->gm, ch->fd, gpa(a->buf), a->len)
						     : gm_write_fd(vm->gm, ch->fd, gpa(a->buf), a->len);
		if (n > 0) {
			if (a->op == CLOAK_CHAN_READ) {
				ch->bytes_in += (uint64_t)n;
			} else {
				ch->bytes_out += (uint64_t)n;
				ch->want_write = false;
			}
			return n;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (a->op == CLOAK_CHAN_WRITE)
				ch->want_write = true;
			return -CLOAK_EAGAIN;
		}
		/* 0 from read is EOF; EPIPE/ECONNRESET: the peer is gone. */
		channel_drop(vm, ch);
		return -CLOAK_EPIPE;
	}
}

static int hc_chan_io(struct vm *vm, void *args)
{
	struct cloak_hc_chan_io *a = args;
	if (!vm->dev || a->handle >= vm->dev->nchan || !vm->dev->chan[a->handle].opened)
		a->ret = -CLOAK_ENOENT;
	else
		a->ret = chan_io(vm, &vm->dev->chan[a->handle], a);
	return 0;
}

const struct hc_def hc_chan_open_def = { CLOAK_HC_CHAN_OPEN, "chan_open",
					 sizeof(struct cloak_hc_chan_open), hc_chan_open };
const struct hc_def hc_chan_io_def = { CLOAK_HC_CHAN_IO, "chan_io",
				       sizeof(struct cloak_hc_chan_io), hc_chan_io };

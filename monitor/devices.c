/*
 * Device registry: parses --block/--channel, opens images, binds listening
 * sockets, waits on channels with epoll for POLL, and at exit dumps shared
 * pages (--dump-shared) and closes everything. See devices.h.
 */
#include "devices.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "options.h"

/* NAME: 1..31 characters from [A-Za-z0-9_.-], so it fits the ABI's
 * NUL-terminated name field and reads well in messages. */
static int parse_name(const char *spec, const char *what, char *name, const char **rest,
		      char *err, size_t errlen)
{
	const char *eq = strchr(spec, '=');
	size_t n = eq ? (size_t)(eq - spec) : 0;
	if (!eq || n == 0 || n >= CLOAK_NAME_MAX) {
		snprintf(err, errlen, "%s '%s': expected NAME=... with a name of 1-%u "
			 "characters", what, spec, CLOAK_NAME_MAX - 1);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		char c = spec[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.')) {
			snprintf(err, errlen, "%s '%s': the name may use only letters, "
				 "digits, '_', '-' and '.'", what, spec);
			return -1;
		}
	}
	memcpy(name, spec, n);
	name[n] = '\0';
	*rest = eq + 1;
	return 0;
}

int devices_parse_block(const char *spec, struct block_dev *b, char *err, size_t errlen)
{
	const char *rest;
	memset(b, 0, sizeof *b);
	b->fd = -1;
	b->sector_size = 512;
	if (parse_name(spec, "--block", b->name, &rest, err, errlen))
		return -1;
	/* PATH[,ro][,sector=512|4096]: options follow the first comma, so a
	 * path cannot contain commas. */
	const char *comma = strchr(rest, ',');
	size_t plen = comma ? (size_t)(comma - rest) : strlen(rest);
	if (plen == 0 || plen >= sizeof b->path) {
		snprintf(err, errlen, "--block '%s': expected NAME=PATH[,ro][,sector=512|4096] "
			 "with a path of 1-%zu characters", spec, sizeof b->path - 1);
		return -1;
	}
	memcpy(b->path, rest, plen);
	while (comma) {
		const char *opt = comma + 1;
		comma = strchr(opt, ',');
		size_t olen = comma ? (size_t)(comma - opt) : strlen(opt);
		if (olen == 2 && !strncmp(opt, "ro", 2))
			b->read_only = true;
		else if (olen == 10 && !strncmp(opt, "sector=512", 10))
			b->sector_size = 512;
		else if (olen == 11 && !strncmp(opt, "sector=4096", 11))
			b->sector_size = 4096;
		else {
			snprintf(err, errlen, "--block '%s': unknown option '%.*s' (known: ro, "
				 "sector=512, sector=4096)", spec, (int)olen, opt);
			return -1;
		}
	}
	return 0;
}

int devices_parse_channel(const char *spec, struct channel *c, char *err, size_t errlen)
{
	const char *rest;
	memset(c, 0, sizeof *c);
	c->fd = c->listen_fd = c->watched_fd = -1;
	if (parse_name(spec, "--channel", c->name, &rest, err, errlen))
		return -1;
	const char *path;
	if (!strncmp(rest, "listen:", 7)) {
		c->mode = CHAN_LISTEN;
		path = rest + 7;
	} else if (!strncmp(rest, "connect:", 8)) {
		c->mode = CHAN_CONNECT;
		path = rest + 8;
	} else {
		snprintf(err, errlen, "--channel '%s': expected NAME=listen:PATH or "
			 "NAME=connect:PATH", spec);
		return -1;
	}
	if (!*path || strlen(path) >= sizeof c->addr.sun_path) {
		snprintf(err, errlen, "--channel '%s': the socket path must have 1-%zu "
			 "characters", spec, sizeof c->addr.sun_path - 1);
		return -1;
	}
	c->addr.sun_family = AF_UNIX;
	strcpy(c->addr.sun_path, path);
	return 0;
}

static int open_block(struct block_dev *b, char *err, size_t errlen)
{
	b->fd = open(b->path, (b->read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (b->fd < 0) {
		snprintf(err, errlen, "--block %s: cannot open %s%s: %s", b->name, b->path,
			 !b->read_only && (errno == EACCES || errno == EROFS)
				 ? " for writing (add ,ro to attach it read-only)" : "",
			 strerror(errno));
		return -1;
	}
	struct stat st;
	if (fstat(b->fd, &st) || !(S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))) {
		snprintf(err, errlen, "--block %s: %s is not a regular file or block device",
			 b->name, b->path);
		return -1;
	}
	/* Two VMs writing one image would corrupt it: take a lock. */
	if (flock(b->fd, (b->read_only ? LOCK_SH : LOCK_EX) | LOCK_NB)) {
		snprintf(err, errlen, "--block %s: %s is in use by another process",
			 b->name, b->path);
		return -1;
	}
	off_t end = lseek(b->fd, 0, SEEK_END);
	if (end < (off_t)b->sector_size) {
		snprintf(err, errlen, "--block %s: %s is %lld bytes, smaller than one "
			 "%u-byte sector", b->name, b->path, (long long)(end < 0 ? 0 : end),
			 b->sector_size);
		return -1;
	}
	/* A trailing partial sector is never exposed to the guest. */
	b->capacity = (uint64_t)end - (uint64_t)end % b->sector_size;
	return 0;
}

static int bind_channel(struct channel *c, char *err, size_t errlen)
{
	struct stat st;
	if (lstat(c->addr.sun_path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen, "--channel %s: %s exists and is not a socket: "
				 "remove it or choose another path", c->name, c->addr.sun_path);
			return -1;
		}
		unlink(c->addr.sun_path); /* a stale socket from an earlier run */
	}
	c->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->listen_fd < 0 ||
	    bind(c->listen_fd, (struct sockaddr *)&c->addr, sizeof c->addr) ||
	    listen(c->listen_fd, 4)) {
		snprintf(err, errlen, "--channel %s: cannot listen on %s: %s", c->name,
			 c->addr.sun_path, strerror(errno));
		return -1;
	}
	return 0;
}

static bool block_name_taken(const struct devices *d, unsigned upto, const char *name)
{
	for (unsigned i = 0; i < upto; i++)
		if (!strcmp(d->block[i].name, name))
			return true;
	return false;
}

static bool chan_name_taken(const struct devices *d, unsigned upto, const char *name)
{
	for (unsigned i = 0; i < upto; i++)
		if (!strcmp(d->chan[i].name, name))
			return true;
	return false;
}

int devices_setup(struct vm *vm, const struct options *o, char *err, size_t errlen,
		  int *status)
{
	vm->dev = NULL;
	if (o->nblock == 0 && o->nchannel == 0 && !o->dump_shared)
		return 0;
	struct devices *d = calloc(1, sizeof *d);
	if (!d) {
		*status = CLOAK_EXIT_INTERNAL;
		return snprintf(err, errlen, "out of memory"), -1;
	}
	d->epoll_fd = d->dump_fd = -1;
	vm->dev = d; /* devices_finish() cleans up whatever was opened */
	*status = CLOAK_EXIT_USAGE;
	if (o->nblock > CLOAK_BLOCK_MAX || o->nchannel > CLOAK_CHAN_MAX)
		return snprintf(err, errlen, "at most %u block devices and %u channels",
				CLOAK_BLOCK_MAX, CLOAK_CHAN_MAX), -1;
	for (unsigned i = 0; i < o->nblock; i++) {
		struct block_dev *b = &d->block[i];
		if (devices_parse_block(o->block[i], b, err, errlen))
			return -1;
		if (block_name_taken(d, i, b->name))
			return snprintf(err, errlen, "--block: two devices are named '%s'",
					b->name), -1;
		d->nblock = i + 1;
	}
	for (unsigned i = 0; i < o->nchannel; i++) {
		struct channel *c = &d->chan[i];
		if (devices_parse_channel(o->channel[i], c, err, errlen))
			return -1;
		if (chan_name_taken(d, i, c->name))
			return snprintf(err, errlen, "--channel: two channels are named '%s'",
					c->name), -1;
		d->nchan = i + 1;
	}
	*status = CLOAK_EXIT_NOHOST;
	/* Everything that opens a file or creates a socket happens here, before
	 * the seccomp sandbox (sandbox.h) forbids it. */
	if (o->dump_shared) {
		d->dump_fd = open(o->dump_shared, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (d->dump_fd < 0)
			return snprintf(err, errlen, "--dump-shared: cannot create %s: %s",
					o->dump_shared, strerror(errno)), -1;
	}
	for (unsigned i = 0; i < d->nblock; i++)
		if (open_block(&d->block[i], err, errlen))
			return -1;
	for (unsigned i = 0; i < d->nchan; i++)
		if (d->chan[i].mode == CHAN_LISTEN && bind_channel(&d->chan[i], err, errlen))
			return -1;
		else if (d->chan[i].mode == CHAN_CONNECT)
			channel_connect(vm, &d->chan[i]);
	d->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (d->epoll_fd < 0)
		return snprintf(err, errlen, "epoll_create1: %s", strerror(errno)), -1;
	for (unsigned i = 0; i < d->nblock; i++)
		vm_verbose(vm, "block %u '%s': %s, %llu bytes, %u-byte sectors%s", i,
			   d->block[i].name, d->block[i].path,
			   (unsigned long long)d->block[i].capacity, d->block[i].sector_size,
			   d->block[i].read_only ? ", read-only" : "");
	for (unsigned i = 0; i < d->nchan; i++)
		vm_verbose(vm, "channel %u '%s': %s %s", i, d->chan[i].name,
			   d->chan[i].mode == CHAN_LISTEN ? "listening on" : "will connect to",
			   d->chan[i].addr.sun_path);
	return 0;
}

uint64_t devices_caps(const struct vm *vm)
{
	if (!vm->dev)
		return 0;
	return (vm->dev->nblock ? CLOAK_CAP_BLOCK : 0) | (vm->dev->nchan ? CLOAK_CAP_CHANNEL : 0);
}

/* Registers exactly `events` for `fd` in the epoll set (0: not at all). */
static int watch(struct devices *d, unsigned idx, int fd, uint32_t events)
{
	struct channel *c = &d->chan[idx];
	if (c->watched && (c->watched_fd != fd || !events)) {
		epoll_ctl(d->epoll_fd, EPOLL_CTL_DEL, c->watched_fd, NULL);
		c->watched = 0;
	}
	if (!events || (c->watched == events && c->watched_fd == fd))
		return 0;
	struct epoll_event ev = { .events = events, .data.u32 = idx };
	int op = c->watched ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
	if (epoll_ctl(d->epoll_fd, op, fd, &ev))
		return -1;
	c->watched = events;
	c->watched_fd = fd;
	return 0;
}

int devices_poll(struct vm *vm, uint64_t timeout_ns, uint64_t wait_set, uint64_t *ready)
{
	struct devices *d = vm->dev;
	uint64_t blocks = d->nblock ? (1ull << d->nblock) - 1 : 0;
	uint64_t known = blocks;
	for (unsigned i = 0; i < d->nchan; i++)
		if (d->chan[i].opened)
			known |= CLOAK_CHAN_POLL_BIT(i);
	*ready = 0;
	if (wait_set & ~known)
		return -CLOAK_ENOENT; /* a device that does not exist or is not open */
	uint64_t now = wait_set & blocks; /* block I/O never waits */
	for (unsigned i = 0; i < d->nchan; i++) {
		struct channel *c = &d->chan[i];
		int fd = c->fd >= 0 ? c->fd : c->listen_fd;
		if (!(wait_set & CLOAK_CHAN_POLL_BIT(i))) {
			watch(d, i, -1, 0);
			continue;
		}
		if (c->peer_gone || fd < 0) { /* the next call reports EPIPE or connects */
			now |= CLOAK_CHAN_POLL_BIT(i);
			continue;
		}
		uint32_t ev = EPOLLIN | EPOLLRDHUP | (c->fd >= 0 && c->want_write ? EPOLLOUT : 0);
		if (watch(d, i, fd, ev))
			return -CLOAK_EIO;
	}
	/* Milliseconds, rounded up so a short deadline is not a busy loop;
	 * a day at most (the guest polls again if it wants longer). The
	 * sandbox allows epoll_wait, not the nanosecond epoll_pwait2. */
	int ms = 0;
	if (!now) {
		uint64_t t = timeout_ns / 1000000ull + (timeout_ns % 1000000ull != 0);
		ms = t > 86400000ull ? 86400000 : (int)t;
	}
	struct epoll_event evs[CLOAK_CHAN_MAX];
	/* EINTR: the watchdog or a termination signal; the run loop stops. */
	int n = epoll_wait(d->epoll_fd, evs, CLOAK_CHAN_MAX, ms);
	for (int k = 0; k < n; k++)
		if (evs[k].data.u32 < d->nchan)
			now |= CLOAK_CHAN_POLL_BIT(evs[k].data.u32);
	*ready = now & wait_set;
	return 0;
}

static void dump_page(void *ctx, uint64_t gpa_v, const void *page)
{
	int *fd = ctx;
	if (*fd >= 0 && write(*fd, page, CLOAK_PAGE_SIZE) != (ssize_t)CLOAK_PAGE_SIZE) {
		close(*fd);
		*fd = -1;
	}
}

void devices_finish(struct vm *vm, const char *dump_path)
{
	struct devices *d = vm->dev;
	if (!d)
		return;
	if (dump_path && d->dump_fd >= 0 && vm->gm) {
		/* Raw pages in address order, so a secret straddling two
		 * adjacent shared pages stays contiguous for the scanner. */
		int fd = d->dump_fd;
		gm_for_each_shared_page(vm->gm, dump_page, &fd);
		if (fd < 0 || close(fd))
			fprintf(stderr, "cloak: --dump-shared: cannot write %s: %s\n",
				dump_path, strerror(errno));
		else
			vm_verbose(vm, "dumped %llu shared pages to %s",
				   (unsigned long long)gm_shared_pages(vm->gm), dump_path);
	} else if (d->dump_fd >= 0) {
		close(d->dump_fd);
	}
	for (unsigned i = 0; i < d->nblock; i++)
		if (d->block[i].fd >= 0)
			close(d->block[i].fd);
	for (unsigned i = 0; i < d->nchan; i++) {
		struct channel *c = &d->chan[i];
		if (c->fd >= 0)
			close(c->fd);
		if (c->listen_fd >= 0) {
			close(c->listen_fd);
			/* Refused (EPERM) inside the sandbox: the socket file
			 * then stays, and the next start replaces it. */
			unlink(c->addr.sun_path);
		}
		vm_verbose(vm, "channel '%s': %llu bytes in, %llu bytes out", c->name,
			   (unsigned long long)c->bytes_in, (unsigned long long)c->bytes_out);
	}
	if (d->epoll_fd >= 0)
		close(d->epoll_fd);
	free(d);
	vm->dev = NULL;
}

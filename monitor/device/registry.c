/* SPDX-License-Identifier: ISC */
/* The device registry; see registry.h. */
#include "registry.h"

#include <errno.h>
#include <limits.h> /* PATH_MAX */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "cli/options.h"

/* Whether two socket paths name one file: the same text, or the same
 * name in one directory however each spells it (d/./s, d//s, a link). */
static bool same_socket(const char *a, const char *b)
{
	if (!strcmp(a, b))
		return true;
	const char *sa = strrchr(a, '/'), *sb = strrchr(b, '/');
	const char *na = sa ? sa + 1 : a, *nb = sb ? sb + 1 : b;
	if (strcmp(na, nb))
		return false;
	char da[PATH_MAX], db[PATH_MAX], ra[PATH_MAX], rb[PATH_MAX];
	snprintf(da, sizeof da, "%.*s", sa ? (int)(sa - a) + 1 : 1, sa ? a : ".");
	snprintf(db, sizeof db, "%.*s", sb ? (int)(sb - b) + 1 : 1, sb ? b : ".");
	return realpath(da, ra) && realpath(db, rb) && !strcmp(ra, rb);
}

static int parse_all(struct devices *d, const struct options *o, struct fail *f)
{
	for (unsigned i = 0; i < o->nblock; i++) {
		if (block_parse(o->block[i], &d->block[i], f))
			return -1;
		d->nblock = i + 1;
		for (unsigned j = 0; j < i; j++)
			if (!strcmp(d->block[j].name, d->block[i].name))
				return fail_set(f, CLOAK_EXIT_USAGE, "--block: two devices are "
						"named '%s'", d->block[i].name);
	}
	for (unsigned i = 0; i < o->nchannel; i++) {
		struct channel *c = &d->chan[i];
		if (channel_parse(o->channel[i], c, f))
			return -1;
		c->index = i;
		d->nchan = i + 1;
		for (unsigned j = 0; j < i; j++) {
			if (!strcmp(d->chan[j].name, c->name))
				return fail_set(f, CLOAK_EXIT_USAGE, "--channel: two channels are "
						"named '%s'", c->name);
			const struct channel *prev = &d->chan[j];
			if (prev->given_fd >= 0 || c->given_fd >= 0) {
				if (prev->given_fd == c->given_fd)
					return fail_set(f, CLOAK_EXIT_USAGE, "--channel: '%s' and "
							"'%s' use the same descriptor %d", prev->name,
							c->name, c->given_fd);
			} else if (same_socket(prev->addr.sun_path, c->addr.sun_path))
				return fail_set(f, CLOAK_EXIT_USAGE, "--channel: '%s' and '%s' use "
						"the same socket %s", d->chan[j].name, c->name,
						c->addr.sun_path);
		}
	}
	return 0;
}

int devices_check(const struct options *o, struct fail *f)
{
	if (o->nblock > CLOAK_BLOCK_MAX || o->nchannel > CLOAK_CHAN_MAX)
		return fail_set(f, CLOAK_EXIT_USAGE, "at most %u block devices and %u channels",
				CLOAK_BLOCK_MAX, CLOAK_CHAN_MAX);
	struct devices *d = calloc(1, sizeof *d);
	if (!d)
		return fail_set(f, CLOAK_EXIT_INTERNAL, "out of memory");
	int r = parse_all(d, o, f);
	free(d); /* parsing opens nothing */
	return r;
}

/* The path broker, which also creates the listen: channels' sockets; not
 * started when every channel is a socket given to the monitor (fd:). */
static int start_broker(struct devices *d, struct fail *f)
{
	struct broker_path paths[CLOAK_CHAN_MAX];
	struct broker_listener made[CLOAK_CHAN_MAX];
	bool paths_named = false;
	for (unsigned i = 0; i < d->nchan; i++) {
		const struct channel *c = &d->chan[i];
		bool given = c->given_fd >= 0;
		paths_named |= !given;
		paths[i] = (struct broker_path){ .addr = c->addr,
						 .listen = c->mode == CHAN_LISTEN && !given,
						 .mode = c->socket_mode };
	}
	if (!paths_named)
		return 0;
	if (broker_start(&d->broker, paths, d->nchan, made, f))
		return -1;
	for (unsigned i = 0; i < d->nchan; i++)
		if (paths[i].listen && channel_take_listener(&d->chan[i], &made[i], f))
			return -1;
	return 0;
}

int devices_setup(struct devices **out, const struct options *o, struct fail *f)
{
	*out = NULL;
	if (o->nblock == 0 && o->nchannel == 0)
		return 0;
	if (devices_check(o, f))
		return -1;
	struct devices *d = calloc(1, sizeof *d);
	if (!d)
		return fail_set(f, CLOAK_EXIT_INTERNAL, "out of memory");
	d->epoll_fd = d->broker.fd = -1;
	for (unsigned i = 0; i < CLOAK_CHAN_MAX; i++)
		d->watched_fd[i] = -1;
	d->verbose = o->verbose;
	*out = d; /* devices_finish() cleans up whatever was opened */
	if (parse_all(d, o, f))
		return -1;
	/* Everything that opens a file or creates a socket happens here,
	 * before the seccomp sandbox (process/sandbox.h) forbids it. */
	for (unsigned i = 0; i < d->nblock; i++)
		if (block_open(&d->block[i], d->block, i, f))
			return -1;
	for (unsigned i = 0; i < d->nchan; i++)
		if (d->chan[i].given_fd >= 0 && channel_take_given(&d->chan[i], f))
			return -1;
	if (d->nchan && start_broker(d, f))
		return -1;
	for (unsigned i = 0; i < d->nchan; i++)
		if (d->chan[i].mode == CHAN_CONNECT)
			channel_connect_first(&d->chan[i]);
	d->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (d->epoll_fd < 0)
		return fail_set(f, CLOAK_EXIT_INTERNAL, "epoll_create1: %s", strerror(errno));
	if (o->verbose) {
		for (unsigned i = 0; i < d->nblock; i++)
			fprintf(stderr, "cloak: block %u '%s': %s, %llu bytes, %u-byte sectors%s\n",
				i, d->block[i].name, d->block[i].path,
				(unsigned long long)d->block[i].capacity, d->block[i].sector_size,
				d->block[i].read_only ? ", read-only" : "");
		for (unsigned i = 0; i < d->nchan; i++) {
			const struct channel *c = &d->chan[i];
			if (c->given_fd >= 0)
				fprintf(stderr, "cloak: channel %u '%s': listening on descriptor "
					"%d, as given\n", i, c->name, c->given_fd);
			else
				fprintf(stderr, "cloak: channel %u '%s': %s %s%s\n", i, c->name,
					c->mode == CHAN_LISTEN ? "listening on" : "connects to",
					c->addr.sun_path, c->mode == CHAN_CONNECT && c->fd < 0
					? " (nobody listens yet)" : "");
		}
	}
	return 0;
}

uint64_t devices_caps(const struct devices *d)
{
	if (!d)
		return 0;
	return (d->nblock ? CLOAK_CAP_BLOCK : 0) | (d->nchan ? CLOAK_CAP_CHANNEL : 0);
}

void devices_finish(struct devices *d)
{
	if (!d)
		return;
	for (unsigned i = 0; i < d->nblock; i++)
		block_close(&d->block[i]);
	for (unsigned i = 0; i < d->nchan; i++) {
		struct channel *c = &d->chan[i];
		if (d->verbose)
			fprintf(stderr, "cloak: channel '%s': %llu bytes in, %llu bytes out\n",
				c->name, (unsigned long long)c->bytes_in,
				(unsigned long long)c->bytes_out);
		channel_close(c);
	}
	broker_stop(&d->broker); /* it removes the listening sockets it made */
	if (d->epoll_fd >= 0)
		close(d->epoll_fd);
	free(d);
}

struct block_dev *devices_block_by_name(struct devices *d, const char *name, unsigned *h)
{
	for (unsigned i = 0; d && i < d->nblock; i++)
		if (!strcmp(d->block[i].name, name)) {
			*h = i;
			return &d->block[i];
		}
	return NULL;
}

struct block_dev *devices_block(struct devices *d, uint64_t handle)
{
	return d && handle < d->nblock ? &d->block[handle] : NULL;
}

struct channel *devices_chan_by_name(struct devices *d, const char *name, unsigned *h)
{
	for (unsigned i = 0; d && i < d->nchan; i++)
		if (!strcmp(d->chan[i].name, name)) {
			*h = i;
			return &d->chan[i];
		}
	return NULL;
}

struct channel *devices_chan(struct devices *d, uint64_t handle)
{
	return d && handle < d->nchan && d->chan[handle].opened ? &d->chan[handle] : NULL;
}

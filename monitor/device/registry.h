/* SPDX-License-Identifier: ISC */
/*
 * The guest's devices: block devices and channels, made from the
 * --block/--channel options before the sandbox (every file opened and
 * socket bound there), and closed at exit. The calls (call_block.c,
 * call_channel.c, call_poll.c) find devices here by name or handle.
 *
 * Handles: block devices are 0..CLOAK_BLOCK_MAX-1 with poll bit 1 << h;
 * channels 0..CLOAK_CHAN_MAX-1 with poll bit CLOAK_CHAN_POLL_BIT(h), so one
 * 64-bit wait set covers both.
 */
#ifndef CLOAK_DEVICE_REGISTRY_H
#define CLOAK_DEVICE_REGISTRY_H

#include <stdbool.h>
#include <stdint.h>

#include "block.h"
#include "channel.h"
#include "fail.h"
#include "process/broker.h"

struct options;

struct devices {
	int epoll_fd;
	struct block_dev block[CLOAK_BLOCK_MAX];
	unsigned nblock;
	struct channel chan[CLOAK_CHAN_MAX];
	unsigned nchan;
	uint32_t watched[CLOAK_CHAN_MAX]; /* epoll events registered per channel */
	int watched_fd[CLOAK_CHAN_MAX];
	uint32_t watched_gen[CLOAK_CHAN_MAX]; /* conn_gen when registered */
	struct broker broker;
	bool verbose;
};

/* Parses every --block/--channel spec and opens nothing: a usage error
 * (CLOAK_EXIT_USAGE) is reported as one whatever the host lacks. */
int devices_check(const struct options *o, struct fail *f);
/* Parses every spec first (CLOAK_EXIT_USAGE), then opens images and binds
 * sockets (CLOAK_EXIT_RESOURCE), so a typo touches nothing. *out stays
 * NULL when no device was asked for. */
int devices_setup(struct devices **out, const struct options *o, struct fail *f);
/* CLOAK_CAP_* bits for the attached devices (0 for NULL). */
uint64_t devices_caps(const struct devices *d);
/* Closes every device; the broker then removes listening sockets. */
void devices_finish(struct devices *d);

struct block_dev *devices_block_by_name(struct devices *d, const char *name, unsigned *h);
struct block_dev *devices_block(struct devices *d, uint64_t handle);
struct channel *devices_chan_by_name(struct devices *d, const char *name, unsigned *h);
/* An opened channel, or NULL. */
struct channel *devices_chan(struct devices *d, uint64_t handle);

#endif

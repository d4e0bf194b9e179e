/*
 * Guest devices: block devices (raw image files) and channels (byte
 * streams to host Unix sockets), issue 4. main() builds the registry from
 * the --block/--channel options; the BLOCK_* and CHAN_* calls
 * (hc_block.c, hc_channel.c) and POLL reach devices only through it.
 *
 * Handles: block devices are 0..CLOAK_BLOCK_MAX-1 and their poll bit is
 * 1 << handle; channels are 0..CLOAK_CHAN_MAX-1 with poll bit
 * CLOAK_CHAN_POLL_BIT(handle), so one 64-bit wait set covers both.
 */
#ifndef CLOAK_DEVICES_H
#define CLOAK_DEVICES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/un.h>

#include "vm.h"

struct options;

struct block_dev {
	char name[CLOAK_NAME_MAX];
	char path[256];
	int fd;
	uint64_t capacity;    /* bytes, a multiple of sector_size */
	uint32_t sector_size; /* 512 or 4096 */
	bool read_only;
};

enum chan_mode { CHAN_LISTEN, CHAN_CONNECT };

struct channel {
	char name[CLOAK_NAME_MAX];
	struct sockaddr_un addr;
	enum chan_mode mode;
	int listen_fd;     /* CHAN_LISTEN: bound at start-up, -1 otherwise */
	int fd;            /* the connection, -1 until there is one */
	bool opened;       /* the guest has opened it */
	bool peer_gone;    /* EOF, reset, or connect refused: reads/writes fail EPIPE */
	bool want_write;   /* last write hit a full socket: poll waits for EPOLLOUT */
	uint32_t watched;  /* events currently registered in epoll (0: none) */
	int watched_fd;    /* which fd they are registered for */
	uint64_t bytes_in, bytes_out;
};

struct devices {
	int epoll_fd;
	struct block_dev block[CLOAK_BLOCK_MAX];
	unsigned nblock;
	struct channel chan[CLOAK_CHAN_MAX];
	unsigned nchan;
	int dump_fd; /* --dump-shared file, opened before the sandbox */
};

/* Parses the options' --block/--channel specs, opens the images and binds
 * listening sockets. vm->dev stays NULL when no device was asked for.
 * Also opens the --dump-shared file (vm->dev is then non-NULL even with
 * no device). Returns 0, or -1 with a one-line reason in err and *status set
 * (CLOAK_EXIT_USAGE for a malformed spec, CLOAK_EXIT_NOHOST for an image or
 * socket path that cannot be used). */
int devices_setup(struct vm *vm, const struct options *o, char *err, size_t errlen,
		  int *status);
/* CLOAK_CAP_* bits for the attached devices. */
uint64_t devices_caps(const struct vm *vm);
/* At guest exit, before guest memory is wiped: writes every shared page to
 * `dump_path` if given (test hook, --dump-shared), then closes every device
 * and removes listening sockets it created. Safe with vm->dev == NULL. */
void devices_finish(struct vm *vm, const char *dump_path);

/* Parsers, exposed for unit tests. Return 0 or -1 with a reason in err. */
int devices_parse_block(const char *spec, struct block_dev *out, char *err, size_t errlen);
int devices_parse_channel(const char *spec, struct channel *out, char *err, size_t errlen);

/* Waits up to timeout_ns for any device in wait_set to be ready; fills
 * *ready. Block devices are always ready (their I/O is synchronous); a
 * channel is ready when it has input, its peer hung up, a connection is
 * waiting to be accepted, or a write that hit backpressure can proceed.
 * Returns 0 or a negative CLOAK_E* code. A signal ends the wait early. */
int devices_poll(struct vm *vm, uint64_t timeout_ns, uint64_t wait_set, uint64_t *ready);

/* Channel helpers (hc_channel.c). */
/* Start-up, for connect: channels: creates the socket and connects (the
 * sandbox forbids both later). If no one listens, the channel is marked
 * gone and the guest's open answers -CLOAK_EPIPE. */
void channel_connect(struct vm *vm, struct channel *ch);
/* Makes sure a listen: channel has a connection, accepting a pending one;
 * returns true if ch->fd is usable now. */
bool channel_try_connect(struct vm *vm, struct channel *ch);
/* Drops the connection after the peer went away. */
void channel_drop(struct vm *vm, struct channel *ch);

#endif

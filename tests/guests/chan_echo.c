/* SPDX-License-Identifier: ISC */
/*
 * Channel test guest. Modes (argv[1]):
 *   echo NAME            echo everything back until the peer leaves
 *   relay A B            copy A->B and B->A at once, waiting on both
 *   wait NAME MS         read with a deadline: prints the result code
 *   open NAME            print the result of opening NAME
 *   sink NAME BYTES      read BYTES bytes, print "received N"
 *   source NAME BYTES    write BYTES bytes (byte i = i & 0xff), then "sent N"
 *   reopen NAME N        serve N successive peers with echo, one after another
 *   hangup NAME N        for N successive peers: read 1 byte, answer "bye",
 *                        hang up while the peer is still connected
 *   request NAME         read until the peer has sent everything (EOF), then
 *                        reply "got N bytes": a peer that half-closed still
 *                        gets the reply
 *   poll NAME MS         one POLL on the channel for MS ms (nobody ever sends)
 *   poll0 NAME           zero-timeout POLLs (run with one block device): the
 *                        channel, the block device, one that does not exist,
 *                        no device at all; prints each result
 *   spin NAME MS         zero-timeout POLLs in a loop until the channel is
 *                        ready (a peer sends) or MS ms pass, then one read:
 *                        prints "ready" and the bytes, or "not ready"
 *   xecho NAME           echo as a request-reply service does: each reply
 *                        and the read of what comes next in one call
 *                        (cloak_chan_write_read), until the peer leaves
 *   xbad NAME            one byte (its read accepts the peer), then CHAN_XFER
 *                        calls with bad arguments, each with bytes to write:
 *                        prints "NAME ret=N written=W"; then "done" written
 *   hold NAME MS         one byte (its read accepts the peer), then MS ms
 *                        reading the clock alone while the peer's next bytes
 *                        wait unread, then those bytes: prints "held: ..."
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloak/channel.h"
#include "cloak/guest.h"
#include "raw_calls.h"

static unsigned char buf[64 * 1024];

static struct cloak_hc_chan_xfer xfer_blk __attribute__((section(".data.shared"), aligned(64)));

static int xecho(int h)
{
	unsigned long long total = 0;
	long n = cloak_chan_read(h, buf, sizeof buf / 2, CLOAK_CHAN_FOREVER);
	while (n > 0) {
		total += (unsigned long long)n;
		/* The reply from the first half, the next bytes into the second. */
		size_t sent;
		long next = cloak_chan_write_read(h, buf, (size_t)n, CLOAK_CHAN_FOREVER, buf + sizeof buf / 2,
						  sizeof buf / 2, CLOAK_CHAN_FOREVER, &sent);
		if (sent != (size_t)n) {
			printf("xecho: sent %zu of %ld, then %ld\n", sent, n, next);
			return 1;
		}
		if (next > 0)
			memcpy(buf, buf + sizeof buf / 2, (size_t)next);
		n = next;
	}
	printf("xechoed %llu bytes, then %ld\n", total, n);
	return n == -CLOAK_EPIPE ? 0 : 1;
}

/* One CHAN_XFER as the test writes it: 4 bytes to send from a shared
 * page, the room to read given. */
static void xfer_raw(const char *name, uint64_t h, uint64_t in, uint64_t in_len, uint64_t out_len)
{
	memcpy(blk.page, "BAD!", 4);
	xfer_blk = (struct cloak_hc_chan_xfer){ .handle = h, .timeout_ns = 1000000, .out = (uintptr_t)blk.page,
						.out_len = out_len, .in = in, .in_len = in_len };
	int64_t r = cloak_hypercall(CLOAK_HC_CHAN_XFER, &xfer_blk);
	printf("%s ret=%lld written=%llu\n", name, (long long)r, (unsigned long long)xfer_blk.written);
}

static int xbad(int h)
{
	long n = cloak_chan_read(h, buf, 1, cloak_time_ns() + 20000000000ull);
	if (n != 1)
		return printf("first byte: %ld\n", n), 3;
	uint64_t mem = cloak_boot_info()->mem_size, room = (uintptr_t)blk.page + 64;
	xfer_raw("xfer_in_beyond_end", (uint64_t)h, mem - 8, 16, 4);
	xfer_raw("xfer_in_wraps", (uint64_t)h, UINT64_MAX - 7, 16, 4);
	xfer_raw("xfer_in_len_zero", (uint64_t)h, room, 0, 4);
	xfer_raw("xfer_in_len_too_big", (uint64_t)h, room, CLOAK_CHAN_IO_MAX + 1, 4);
	xfer_raw("xfer_out_len_too_big", (uint64_t)h, room, 16, CLOAK_CHAN_IO_MAX + 1);
	xfer_raw("xfer_no_such_channel", CLOAK_CHAN_MAX - 1, room, 16, 4);
	int r = cloak_chan_write(h, "done", 4, CLOAK_CHAN_FOREVER);
	printf("done: %d\n", r);
	return r ? 1 : 0;
}

static int open_or_die(const char *name)
{
	int h = cloak_chan_open(name);
	if (h < 0) {
		printf("open %s: %d\n", name, h);
		cloak_exit(3);
	}
	return h;
}

static int echo(int h)
{
	unsigned long long total = 0;
	for (;;) {
		long n = cloak_chan_read(h, buf, sizeof buf, CLOAK_CHAN_FOREVER);
		if (n < 0) {
			printf("echoed %llu bytes, then %ld\n", total, n);
			return n == -CLOAK_EPIPE ? 0 : 1;
		}
		int r = cloak_chan_write(h, buf, (size_t)n, CLOAK_CHAN_FOREVER);
		if (r) {
			printf("write failed: %d\n", r);
			return 1;
		}
		total += (unsigned long long)n;
	}
}

/* Moves whatever one side has to the other, sleeping on both at once. */
static int relay(int a, int b)
{
	unsigned long long moved[2] = { 0, 0 };
	int h[2] = { a, b };
	for (;;) {
		int progress = 0;
		for (int i = 0; i < 2; i++) {
			long n = cloak_chan_read(h[i], buf, sizeof buf, CLOAK_CHAN_NOWAIT);
			if (n == -CLOAK_EAGAIN)
				continue;
			if (n < 0 || cloak_chan_write(h[1 - i], buf, (size_t)n, CLOAK_CHAN_FOREVER)) {
				printf("relayed %llu and %llu bytes, then %ld\n", moved[0], moved[1], n);
				return n == -CLOAK_EPIPE ? 0 : 1;
			}
			moved[i] += (unsigned long long)n;
			progress = 1;
		}
		if (!progress)
			cloak_poll(UINT64_MAX, cloak_chan_poll_bit(a) | cloak_chan_poll_bit(b), NULL);
	}
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return printf("usage: chan_echo MODE NAME...\n"), 2;
	const char *mode = argv[1];
	if (!strcmp(mode, "open")) {
		printf("open: %d\n", cloak_chan_open(argv[2]));
		return 0;
	}
	int h = open_or_die(argv[2]);
	if (!strcmp(mode, "echo"))
		return echo(h);
	if (!strcmp(mode, "reopen")) {
		long peers = argc > 3 ? strtol(argv[3], NULL, 0) : 2;
		for (long i = 0; i < peers; i++) {
			if (i)
				open_or_die(argv[2]);
			if (echo(h))
				return 1;
		}
		return 0;
	}
	if (!strcmp(mode, "hangup")) {
		long peers = argc > 3 ? strtol(argv[3], NULL, 0) : 2;
		for (long i = 0; i < peers; i++) {
			if (i)
				open_or_die(argv[2]);
			int r = cloak_chan_read_full(h, buf, 1, CLOAK_CHAN_FOREVER);
			if (!r)
				r = cloak_chan_write(h, "bye", 3, CLOAK_CHAN_FOREVER);
			if (!r)
				r = cloak_chan_hangup(h);
			long after = cloak_chan_read(h, buf, 1, CLOAK_CHAN_NOWAIT);
			printf("hangup %ld: %d, then read %ld\n", i, r, after);
			if (r)
				return 1;
		}
		return 0;
	}
	if (!strcmp(mode, "request")) {
		unsigned long long got = 0;
		long n;
		while ((n = cloak_chan_read(h, buf, sizeof buf, CLOAK_CHAN_FOREVER)) > 0)
			got += (unsigned long long)n;
		char reply[64];
		int len = snprintf(reply, sizeof reply, "got %llu bytes", got);
		int r = cloak_chan_write(h, reply, (size_t)len, CLOAK_CHAN_FOREVER);
		printf("request: %llu bytes, read ended %ld, reply %d\n", got, n, r);
		return r ? 1 : 0;
	}
	if (!strcmp(mode, "poll") && argc > 3) {
		uint64_t ms = (uint64_t)strtoul(argv[3], NULL, 0);
		printf("polling\n");
		int r = cloak_poll(ms * 1000000ull, cloak_chan_poll_bit(h), NULL);
		printf("poll: %d\n", r);
		return 0;
	}
	if (!strcmp(mode, "poll0")) {
		/* Run with one block device: its handle is 0, poll bit 1. */
		static const struct {
			const char *what;
			uint64_t set;
		} q[] = { { "channel", 0 }, { "block", 1 }, { "no such block device", 2 },
			  { "nothing", 0 } };
		for (unsigned i = 0; i < sizeof q / sizeof q[0]; i++) {
			uint64_t ready = 99, set = i == 0 ? cloak_chan_poll_bit(h) : q[i].set;
			int r = cloak_poll(0, set, &ready);
			printf("poll0 %s: %d ready=%llu\n", q[i].what, r, (unsigned long long)ready);
		}
		return 0;
	}
	if (!strcmp(mode, "spin") && argc > 3) {
		/* Ready first when the peer connects (a read then accepts it and
		 * finds nothing yet), then when its bytes arrive. */
		uint64_t end = cloak_time_ns() + strtoul(argv[3], NULL, 0) * 1000000ull;
		long n = -CLOAK_EAGAIN;
		while (n == -CLOAK_EAGAIN && cloak_time_ns() < end) {
			uint64_t ready = 0;
			if (cloak_poll(0, cloak_chan_poll_bit(h), &ready) != 0)
				return 4;
			if (ready & cloak_chan_poll_bit(h))
				n = cloak_chan_read(h, buf, sizeof buf - 1, CLOAK_CHAN_NOWAIT);
		}
		if (n <= 0) {
			printf("not ready: %ld\n", n);
			return 3;
		}
		buf[n] = 0;
		printf("ready: read %ld: %s\n", n, (char *)buf);
		return 0;
	}
	if (!strcmp(mode, "hold") && argc > 3) {
		/* The wall clock is the runner's: the device process is idle
		 * all through the hold, with bytes it has told the guest of
		 * waiting in the socket. */
		long n = cloak_chan_read(h, buf, 1, cloak_time_ns() + 20000000000ull);
		if (n != 1) {
			printf("first byte: %ld\n", n);
			return 3;
		}
		uint64_t end = cloak_time_ns() + strtoul(argv[3], NULL, 0) * 1000000ull;
		while (cloak_time_ns() < end)
			;
		n = cloak_chan_read(h, buf, sizeof buf - 1, CLOAK_CHAN_NOWAIT);
		if (n <= 0) {
			printf("after the hold: %ld\n", n);
			return 3;
		}
		buf[n] = 0;
		printf("held: read %ld: %s\n", n, (char *)buf);
		return 0;
	}
	if (!strcmp(mode, "xecho"))
		return xecho(h);
	if (!strcmp(mode, "xbad"))
		return xbad(h);
	if (!strcmp(mode, "relay") && argc > 3)
		return relay(h, open_or_die(argv[3]));
	if (!strcmp(mode, "wait") && argc > 3) {
		uint64_t ms = (uint64_t)strtoul(argv[3], NULL, 0);
		uint64_t t0 = cloak_time_ns();
		long n = cloak_chan_read(h, buf, 1, t0 + ms * 1000000ull);
		printf("read: %ld after %llu ms\n", n,
		       (unsigned long long)((cloak_time_ns() - t0) / 1000000ull));
		return 0;
	}
	if (!strcmp(mode, "sink") && argc > 3) {
		unsigned long long want = strtoull(argv[3], NULL, 0), got = 0;
		while (got < want) {
			long n = cloak_chan_read(h, buf, sizeof buf, CLOAK_CHAN_FOREVER);
			if (n < 0)
				return printf("read failed after %llu: %ld\n", got, n), 1;
			got += (unsigned long long)n;
		}
		printf("received %llu\n", got);
		return 0;
	}
	if (!strcmp(mode, "source") && argc > 3) {
		unsigned long long want = strtoull(argv[3], NULL, 0), sent = 0;
		for (size_t i = 0; i < sizeof buf; i++)
			buf[i] = (unsigned char)i;
		while (sent < want) {
			size_t n = want - sent < sizeof buf ? (size_t)(want - sent) : sizeof buf;
			int r = cloak_chan_write(h, buf, n, CLOAK_CHAN_FOREVER);
			if (r)
				return printf("write failed after %llu: %d\n", sent, r), 1;
			sent += n;
		}
		printf("sent %llu\n", sent);
		return 0;
	}
	return printf("unknown mode %s\n", mode), 2;
}

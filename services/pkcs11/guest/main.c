/* SPDX-License-Identifier: ISC */
/*
 * PKCS#11 token guest: a token whose private keys live in protected guest
 * memory, served on a channel the monitor listens on.
 *
 *   cloak --channel p11=listen:SOCK [--block store=IMAGE] build/services/pkcs11.elf \
 *         [-- [--idle=SECONDS] [--message-timeout=SECONDS]]
 *
 * With the block device "store" the token keeps its objects and PINs
 * there, encrypted (p11_persist.c, docs/pkcs11-store.md); without it they
 * last until the guest stops.
 *
 * libcloak-pkcs11.so (services/pkcs11/module) sends one frame per call and reads
 * one back (p11_wire.h), on a connection it keeps for its next call. The
 * token serves one connection at a time, so it ends a kept one between
 * frames: when no next frame has come KEEP_MS after a reply, or after a
 * reply once the connection has had TURN_MS (the others waiting get
 * their turn; the module sends again on a new connection). It hangs up
 * on a frame whose length is out of bounds, a body it cannot parse, a
 * frame cut short for --message-timeout seconds (default 10) or a new
 * connection that sends nothing for --idle seconds (default 10). The
 * token proper is
 * p11_token.c; this file moves bytes and wipes every buffer a request
 * passed through (PINs and imported keys cross them).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "entropy.h"
#include "service.h"
#include "wipe.h"
#include "cloak/channel.h"
#include "cloak/guest.h"
#include "p11_aes.h"
#include "p11_ossl.h"
#include "p11_persist.h"
#include "p11_token.h"

#define CHANNEL "p11"
#define NS_PER_MS 1000000ull
#define KEEP_MS 20  /* a kept connection's wait for the next frame */
#define TURN_MS 200 /* a connection's time before it yields */

const unsigned cloak_config_bounce_pages = 32; /* a 64 KiB frame each way */

static struct p11_token token;
static uint8_t in[4 + P11_BODY_MAX]; /* frames as they come */
static size_t have;		       /* bytes of them in "in" */
static uint8_t reply[4 + P11_BODY_MAX];
static uint64_t idle_ns = 10 * NS_PER_S, message_ns = 10 * NS_PER_S;
static char entropy_report[96], store_report[96];

static bool env_seed(void *ctx, br_hmac_drbg_context *drbg)
{
	return entropy_seed(drbg, entropy_report, sizeof entropy_report) > 0;
}

static struct p11_env env = { env_seed, NULL, NULL };

/* Reads into "in" until it holds want bytes, taking whatever has come
 * (one channel call where a read of the header and then of the body
 * would make two or three): 0, or a channel error. */
static int read_to(int h, size_t want, uint64_t deadline)
{
	while (have < want) {
		long r = cloak_chan_read(h, in + have, sizeof in - have, deadline);
		if (r < 0)
			return (int)r;
		wipe_bounce((size_t)r);
		have += (size_t)r;
	}
	return 0;
}

/* One connection: a reason to hang up ("" for an idle one and one that
 * had its turn), or NULL if the client left. A read takes whatever has
 * arrived (a whole small request in one channel call); bytes of a next
 * frame stay at the front of "in" for the next round, and are wiped when
 * the connection ends (serve). A reply and the wait for the next frame
 * are one channel call (cloak_chan_write_read), which also zeroes what
 * it staged in the bounce pool. */
static const char *serve_frames(int h)
{
	uint64_t start = cloak_time_ns();
	have = 0;
	int r = read_to(h, 1, start + idle_ns);
	if (r == -CLOAK_ETIMEDOUT)
		return ""; /* idle */
	if (r < 0)
		return NULL;
	for (;;) {
		uint64_t deadline = cloak_time_ns() + message_ns;
		r = read_to(h, 4, deadline);
		if (r == -CLOAK_EPIPE)
			return NULL;
		if (r)
			return "message timeout";
		uint32_t len = p11_frame_len(in);
		if (!len)
			return "bad frame length";
		r = read_to(h, 4 + (size_t)len, deadline);
		if (r)
			return r == -CLOAK_EPIPE ? NULL : "message timeout";
		size_t n = p11_token_handle(&token, in + 4, len, reply + 4);
		/* The frame is done with: what follows it moves to the front. */
		have -= 4 + (size_t)len;
		memmove(in, in + 4 + len, have);
		wipe(in + have, 4 + (size_t)len);
		wipe_stack();
		if (!n)
			return "malformed request";
		wire_frame_hdr(reply, (uint32_t)n);
		uint64_t now = cloak_time_ns();
		bool turn_over = now - start > TURN_MS * NS_PER_MS;
		if (have || turn_over) {
			/* A next frame has begun, or the others' turn comes after this
			 * reply: the reply alone. */
			r = cloak_chan_write(h, reply, 4 + n, now + message_ns);
			wipe(reply, 4 + n);
			wipe_bounce(4 + n);
			if (r == -CLOAK_EPIPE)
				return NULL;
			if (r)
				return "client not reading";
			if (turn_over)
				return ""; /* its turn is over */
			continue;
		}
		size_t sent;
		long got = cloak_chan_write_read(h, reply, 4 + n, now + message_ns, in, sizeof in, now + KEEP_MS * NS_PER_MS,
						 &sent);
		wipe(reply, 4 + n);
		if (got > 0) {
			have = (size_t)got;
			continue;
		}
		if (sent < 4 + n)
			return got == -CLOAK_EPIPE ? NULL : "client not reading";
		if (got == -CLOAK_ETIMEDOUT)
			return ""; /* no next frame in KEEP_MS: idle */
		return NULL;
	}
}

static const char *serve(int h)
{
	const char *why = serve_frames(h);
	wipe(in, have); /* what the client left unfinished */
	return why;
}

int main(int argc, char **argv)
{
	compat_init(); /* before the first BearSSL call */
	bool stall = false;
	service_options("pkcs11", argc, argv, "--test-stall-commit", &stall, &idle_ns, &message_ns);
	if (stall)
		p11_persist_stall_commit();
	/* A serial number drawn at boot; a store replaces it by its own, the
	 * same at every start (p11_persist_open). */
	br_hmac_drbg_context drbg;
	uint8_t rnd[P11_SERIAL / 2], serial[P11_SERIAL];
	if (!env_seed(NULL, &drbg)) {
		printf("pkcs11: no entropy source works (%s)\n", entropy_report);
		return 1;
	}
	br_hmac_drbg_generate(&drbg, rnd, sizeof rnd);
	wipe(&drbg, sizeof drbg);
	p11_serial_of(rnd, serial);
	p11_token_init(&token, &env, serial);
	if (p11_persist_open(&token, &env.persist, store_report, sizeof store_report))
		return 1;
	int h = service_open("pkcs11", CHANNEL);
	if (h < 0)
		return 1;
	/* sign: what signs P-256 and RSA (p11_ossl.h), OpenSSL set up now
	 * where it will be used, not at the first signature. */
	printf("pkcs11: ready; protection 0x%llx; %s; %s; aes: %s; sign: %s\n",
	       (unsigned long long)cloak_protection(), entropy_report, store_report, p11_aes_impl(),
	       p11_ossl_sign_impl());
	return service_loop("pkcs11", CHANNEL, h, serve);
}

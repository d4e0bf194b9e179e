/* SPDX-License-Identifier: ISC */
/*
 * PKCS#11 token guest: a token whose private keys live in protected guest
 * memory, served on a channel the monitor listens on.
 *
 *   cloak --channel p11=listen:SOCK [--block store=IMAGE] build/examples/pkcs11.elf \
 *         [-- [--idle=SECONDS] [--message-timeout=SECONDS]]
 *
 * With the block device "store" the token keeps its objects and PINs
 * there, encrypted (p11_persist.c, docs/pkcs11-store.md); without it they
 * last until the guest stops.
 *
 * libcloak-pkcs11.so (tools/pkcs11) connects to SOCK once per call, sends
 * one frame and reads one back (p11_wire.h). The token serves one
 * connection at a time; it hangs up on a frame whose length is out of
 * bounds, a body it cannot parse, a frame cut short for
 * --message-timeout seconds (default 10) or a connection that sends
 * nothing for --idle seconds (default 10). The token proper is
 * p11_token.c; this file moves bytes and wipes every buffer a request
 * passed through (PINs and imported keys cross them).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/compat.h"
#include "../common/entropy.h"
#include "../common/options.h"
#include "../ssh-agent/agent_wipe.h"
#include "cloak/channel.h"
#include "cloak/guest.h"
#include "p11_persist.h"
#include "p11_token.h"

#define CHANNEL "p11"

const unsigned cloak_config_bounce_pages = 32; /* a 64 KiB frame each way */

static struct p11_token token;
static uint8_t msg[P11_BODY_MAX];
static uint8_t reply[4 + P11_BODY_MAX];
static uint64_t idle_ns = 10 * NS_PER_S, message_ns = 10 * NS_PER_S;
static char entropy_report[96], store_report[96];

static bool env_seed(void *ctx, br_hmac_drbg_context *drbg)
{
	return entropy_seed(drbg, entropy_report, sizeof entropy_report) > 0;
}

static struct p11_env env = { env_seed, NULL, NULL };

/* Zeroes the stack below the caller's frame, where the handler and
 * BearSSL kept their temporaries. */
__attribute__((noinline)) static void wipe_stack(void)
{
	uint8_t below[32 * 1024];
	agent_wipe(below, sizeof below);
}

static void wipe_bounce(size_t n)
{
	size_t size;
	void *b = cloak_bounce_area(&size);
	agent_wipe(b, n < size ? n : size);
}

/* One connection: a reason to hang up, or NULL if the client left. */
static const char *serve(int h)
{
	for (;;) {
		uint8_t hdr[4];
		int r = cloak_chan_read_full(h, hdr, 1, cloak_time_ns() + idle_ns);
		if (r == -CLOAK_ETIMEDOUT)
			return "idle";
		if (r < 0)
			return NULL;
		uint64_t deadline = cloak_time_ns() + message_ns;
		r = cloak_chan_read_full(h, hdr + 1, 3, deadline);
		if (r == -CLOAK_EPIPE)
			return NULL;
		if (r)
			return "message timeout";
		uint32_t len = p11_frame_len(hdr);
		if (!len)
			return "bad frame length";
		r = cloak_chan_read_full(h, msg, len, deadline);
		wipe_bounce(len);
		if (r) {
			agent_wipe(msg, len);
			return r == -CLOAK_EPIPE ? NULL : "message timeout";
		}
		size_t n = p11_token_handle(&token, msg, len, reply + 4);
		agent_wipe(msg, len);
		wipe_stack();
		if (!n)
			return "malformed request";
		p11_frame_hdr(reply, (uint32_t)n);
		r = cloak_chan_write(h, reply, 4 + n, cloak_time_ns() + message_ns);
		agent_wipe(reply, 4 + n);
		wipe_bounce(4 + n);
		if (r == -CLOAK_EPIPE)
			return NULL;
		if (r)
			return "client not reading";
	}
}

int main(int argc, char **argv)
{
	compat_init(); /* before the first BearSSL call */
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--test-stall-commit")) {
			p11_persist_stall_commit();
		} else if (!service_timeout_option("pkcs11", argv[i], &idle_ns, &message_ns)) {
			printf("pkcs11: unknown option '%s' (known: --idle=S, --message-timeout=S, "
			       "--test-stall-commit)\n", argv[i]);
			return 2;
		}
	}
	/* A serial number drawn at boot (a new one each start, store or not). */
	br_hmac_drbg_context drbg;
	uint8_t rnd[P11_SERIAL / 2], serial[P11_SERIAL];
	if (!env_seed(NULL, &drbg)) {
		printf("pkcs11: no entropy source works (%s)\n", entropy_report);
		return 1;
	}
	br_hmac_drbg_generate(&drbg, rnd, sizeof rnd);
	agent_wipe(&drbg, sizeof drbg);
	for (unsigned i = 0; i < sizeof rnd; i++) {
		serial[2 * i] = "0123456789abcdef"[rnd[i] >> 4];
		serial[2 * i + 1] = "0123456789abcdef"[rnd[i] & 15];
	}
	p11_token_init(&token, &env, serial);
	if (p11_persist_open(&token, &env.persist, store_report, sizeof store_report))
		return 1;
	if (!cloak_protection())
		printf("pkcs11: warning: memory protection is off\n");
	int h = cloak_chan_open(CHANNEL);
	if (h < 0) {
		printf("pkcs11: no channel '" CHANNEL "' (%d): run with --channel " CHANNEL "=listen:SOCKET\n", h);
		return 1;
	}
	printf("pkcs11: ready; protection 0x%llx; %s; %s\n", (unsigned long long)cloak_protection(),
	       entropy_report, store_report);
	for (;;) {
		const char *why = serve(h);
		if (why && strcmp(why, "idle"))
			printf("pkcs11: hung up on a client: %s\n", why);
		if (why)
			cloak_chan_hangup(h);
		h = cloak_chan_open(CHANNEL);
		if (h < 0) {
			printf("pkcs11: channel error %d\n", h);
			return 1;
		}
	}
}

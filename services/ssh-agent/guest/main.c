/* SPDX-License-Identifier: ISC */
/*
 * ssh-agent guest: an SSH agent whose keys live in protected guest memory,
 * served on a channel the monitor listens on.
 *
 *   cloak --channel agent=listen:SOCK build/services/ssh-agent.elf \
 *         [-- [--idle=SECONDS] [--message-timeout=SECONDS] [--test-hooks]]
 *
 * Point SSH_AUTH_SOCK at SOCK (services/ssh-agent/cloak-ssh-agent does all this). The
 * agent serves one client connection at a time, in order of arrival. It
 * hangs up on a client that sends a frame longer than AGENT_MSG_MAX or of
 * length 0, that stops in the middle of a message for --message-timeout
 * seconds (default 10), or that sends nothing for --idle seconds (default
 * 30) while others may be waiting. Protocol handling is agent.c; this file
 * moves bytes and wipes every buffer a request passed through: the message
 * buffer, the bounce-pool bytes it was copied through (the monitor can see
 * those), and the stack the crypto ran on.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "entropy.h"
#include "service.h"
#include "agent.h"
#include "wipe.h"
#include "cloak/channel.h"
#include "cloak/guest.h"

#define CHANNEL "agent"

/* Requests are small: a few pages of bounce pool are plenty, and the
 * fewer shared pages, the less there is to wipe. */
const unsigned cloak_config_bounce_pages = 4;

static struct agent agent;
static uint8_t msg[AGENT_MSG_MAX];
static uint8_t reply[4 + AGENT_REPLY_MAX];
static uint64_t idle_ns = 30 * NS_PER_S, message_ns = 10 * NS_PER_S;
static char entropy_report[96];

static uint64_t env_now(void *ctx)
{
	return cloak_time_ns();
}

static bool env_seed(void *ctx, br_hmac_drbg_context *drbg)
{
	return entropy_seed(drbg, entropy_report, sizeof entropy_report) > 0;
}

static void env_delay(void *ctx, uint64_t ns)
{
	cloak_poll(ns, 0, NULL);
}

static struct agent_env env = { env_now, env_seed, env_delay, NULL, false, false };

/* Reads exactly n bytes by the deadline, waking at each key expiry to
 * remove the expired keys on time even while a client is connected. */
static long read_by(int h, uint8_t *p, size_t n, uint64_t deadline)
{
	size_t got = 0;
	while (got < n) {
		uint64_t wake = agent_reap(&agent);
		long r = cloak_chan_read(h, p + got, n - got, wake < deadline ? wake : deadline);
		if (r == -CLOAK_ETIMEDOUT && cloak_time_ns() < deadline)
			continue; /* a key expired: reaped at the top of the loop */
		if (r < 0)
			return r;
		got += (size_t)r;
	}
	return 0;
}

/* One client: returns a reason to hang up, or NULL if the client left
 * (or never came: "" when the idle time passed before any message). */
static const char *serve(int h)
{
	for (unsigned served = 0;; served++) {
		uint8_t hdr[4];
		long r = read_by(h, hdr, 1, cloak_time_ns() + idle_ns);
		if (r == -CLOAK_ETIMEDOUT)
			return served ? "idle" : "";
		if (r < 0)
			return NULL;
		uint64_t deadline = cloak_time_ns() + message_ns;
		r = read_by(h, hdr + 1, 3, deadline);
		uint32_t len = r ? 0 : agent_frame_len(hdr);
		if (r == -CLOAK_EPIPE)
			return NULL;
		if (r)
			return "message timeout";
		if (!len)
			return "bad message length";
		r = read_by(h, msg, len, deadline);
		/* The body may hold a private key: wipe what was read of it,
		 * here and in the bounce pool, whatever happened. */
		wipe_bounce(len);
		if (r) {
			wipe(msg, len); /* the part that arrived */
			return r == -CLOAK_EPIPE ? NULL : "message timeout";
		}
		size_t n = agent_handle(&agent, msg, len, reply + 4);
		wipe(msg, len); /* the handled request */
		wipe_stack();
		wire_frame_hdr(reply, (uint32_t)n);
		r = cloak_chan_write(h, reply, 4 + n, cloak_time_ns() + message_ns);
		if (r == -CLOAK_EPIPE)
			return NULL;
		if (r)
			return "client not reading";
	}
}

int main(int argc, char **argv)
{
	compat_init(); /* before the first BearSSL call */
	service_options("ssh-agent", argc, argv, "--test-hooks", &env.test_hooks, &idle_ns, &message_ns);
	env.native_cpu = (cloak_boot_info()->capabilities & CLOAK_CAP_NATIVE_CPU) != 0;
	agent_init(&agent, &env);
	/* Fail at start, not at the first keygen, if there is no entropy. */
	br_hmac_drbg_context drbg;
	bool seeded = env_seed(NULL, &drbg);
	wipe(&drbg, sizeof drbg);
	if (!seeded) {
		printf("ssh-agent: no entropy source works (%s)\n", entropy_report);
		return 1;
	}
	int h = service_open("ssh-agent", CHANNEL);
	if (h < 0)
		return 1;
	printf("ssh-agent: ready; protection 0x%llx; %s; key types ecdsa-sha2-nistp256%s%s\n",
	       (unsigned long long)cloak_protection(), entropy_report,
	       env.native_cpu ? ", ssh-ed25519, ssh-rsa"
			      : " (ssh-ed25519 and ssh-rsa refused: this host's KVM emulates guest "
				"code, where libsodium's Ed25519 has SSE arithmetic and an RSA "
				"signature takes tens of seconds)",
	       env.test_hooks ? "; test hooks on" : "");
	return service_loop("ssh-agent", CHANNEL, h, serve);
}

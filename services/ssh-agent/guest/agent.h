/* SPDX-License-Identifier: ISC */
/*
 * The agent proper: one request message in, one reply message out. No I/O
 * and no runtime: the guest (main.c) feeds it messages from its channel,
 * host tests and the fuzz target call it directly. What it needs from its
 * surroundings comes through struct agent_env.
 */
#ifndef AGENT_H
#define AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <bearssl/bearssl_rand.h>

#include "agent_keys.h"
#include "agent_lock.h"
#include "agent_wire.h"

/* Room for the largest reply: every key with the longest comment. */
#define AGENT_REPLY_MAX (5 + AGENT_KEYS_MAX * (8 + AGENT_BLOB_MAX + AGENT_COMMENT_MAX))

struct agent_env {
	/* Monotonic nanoseconds (lifetimes). */
	uint64_t (*now_ns)(void *ctx);
	/* Seeds drbg from fresh entropy (key generation, lock salts);
	 * returns false if no entropy could be had. */
	bool (*seed)(void *ctx, br_hmac_drbg_context *drbg);
	/* Waits after a wrong unlock passphrase (may be NULL). */
	void (*delay)(void *ctx, uint64_t ns);
	void *ctx;
	/* Answer keyhash@cloak (tests only, see docs/ssh-agent.md). */
	bool test_hooks;
	/* The CPU, not KVM's instruction emulator, runs guest code. Only
	 * then are Ed25519 (agent_ed25519.h: SSE arithmetic) and RSA (tens
	 * of seconds per signature under the emulator, minutes per key
	 * generation) taken; otherwise those keys are refused. */
	bool native_cpu;
};

struct agent {
	struct agent_keys keys;
	struct agent_lock lock;
	const struct agent_env *env;
	unsigned failed_unlocks;
	/* Counters for the guest's log line. */
	unsigned long long signatures, requests, refused;
};

void agent_init(struct agent *a, const struct agent_env *env);
/* Handles one message body msg[0..len) and writes the reply body (type
 * byte first, no length) to out, which has room for AGENT_REPLY_MAX.
 * Returns the reply's length (always at least 1). Expired keys are
 * removed first. The caller wipes msg afterwards. */
size_t agent_handle(struct agent *a, const uint8_t *msg, size_t len, uint8_t *out);
/* Removes expired keys now; returns when the next one expires (agent
 * clock) or UINT64_MAX. */
uint64_t agent_reap(struct agent *a);

#endif

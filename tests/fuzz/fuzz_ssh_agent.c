/* SPDX-License-Identifier: ISC */
/*
 * The ssh-agent guest's message handling (examples/ssh-agent) on hostile
 * input: the input is a client's byte stream, cut into frames the way the
 * guest cuts it (agent_frame_len), each frame handled by agent_handle on
 * one agent with a clock that moves a second per message. Invariants
 * checked after every message, besides the sanitizers: the reply fits and
 * is not empty, no slot past the last key holds a byte (removed keys are
 * wiped), and a locked agent lists no key. The parser is also run on each
 * frame alone, and on an extension's contents as keygen arguments.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../examples/ssh-agent/agent.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t clock_ns;

static uint64_t now(void *ctx)
{
	return clock_ns;
}

static bool seed(void *ctx, br_hmac_drbg_context *d)
{
	br_hmac_drbg_init(d, &br_sha256_vtable, "fuzz", 4);
	return true;
}

static const struct agent_env env = { now, seed, NULL, NULL, true };
static struct agent ag;
static uint8_t out[AGENT_REPLY_MAX];

static void check_wiped(void)
{
	const uint8_t *p = (const uint8_t *)&ag.keys.slot[ag.keys.n];
	size_t n = (AGENT_KEYS_MAX - ag.keys.n) * sizeof ag.keys.slot[0];
	for (size_t i = 0; i < n; i++)
		if (p[i])
			abort(); /* a free slot still holds key material */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	clock_ns = 1;
	agent_init(&ag, &env);
	while (size >= 4) {
		uint32_t len = agent_frame_len(data);
		if (!len || len > size - 4)
			break; /* the guest hangs up, or waits for more */
		const uint8_t *msg = data + 4;
		struct agent_request req;
		if (agent_parse_request(msg, len, &req) == AGENT_PARSE_OK &&
		    req.type == SSH_AGENTC_EXTENSION) {
			struct agent_keygen kg;
			agent_parse_keygen(req.u.ext.contents, &kg);
		}
		size_t n = agent_handle(&ag, msg, len, out);
		if (n < 1 || n > AGENT_REPLY_MAX || ag.keys.n > AGENT_KEYS_MAX)
			abort();
		check_wiped();
		if (ag.lock.locked) {
			uint8_t ids = SSH_AGENTC_REQUEST_IDENTITIES;
			if (agent_handle(&ag, &ids, 1, out) != 5 || out[0] != SSH_AGENT_IDENTITIES_ANSWER)
				abort(); /* locked: an empty list, nothing else */
		}
		clock_ns += 1000000000ull;
		data += 4 + len;
		size -= 4 + len;
	}
	return 0;
}

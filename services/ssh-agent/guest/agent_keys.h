/* SPDX-License-Identifier: ISC */
/*
 * The agent's key store: up to AGENT_KEYS_MAX keys (P-256, Ed25519 or RSA),
 * each known by its type and public part, in the order
 * they were added (the order ssh-add -l shows). A slot's private scalar is
 * wiped whenever the slot stops holding that key: on remove, on remove
 * all, when a lifetime ends, and when an add replaces the key. Pure C (no
 * crypto, no runtime), so host tests can look at the slots after each
 * operation.
 */
#ifndef AGENT_KEYS_H
#define AGENT_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent_wire.h"

#define AGENT_KEYS_MAX 32u

struct agent_key {
	enum agent_key_type type;
	uint8_t d[AGENT_SECRET_MAX];      /* P-256 scalar (big-endian), Ed25519 seed, RSA's p, q, dp, dq, iq */
	uint8_t point[AGENT_PUB_MAX];     /* public part, agent_pub_len(type) bytes */
	uint16_t comment_len;
	char comment[AGENT_COMMENT_MAX];
	bool has_expiry;
	uint64_t expires_ns;              /* agent clock (cloak_time_ns) */
};

struct agent_keys {
	unsigned n;
	struct agent_key slot[AGENT_KEYS_MAX];
};

void keys_init(struct agent_keys *k);
/* The key of this type with this public part, or NULL. */
struct agent_key *keys_find(struct agent_keys *k, enum agent_key_type type, const uint8_t *point);
/* Adds a key (d: AGENT_SECRET_MAX bytes), or replaces the one with the
 * same public part (its comment and lifetime too, as OpenSSH's agent
 * does). Returns 0, or -1 when full or the type is unknown. */
int keys_add(struct agent_keys *k, enum agent_key_type type, const uint8_t d[AGENT_SECRET_MAX],
	     const uint8_t *point, const void *comment, size_t comment_len, bool has_expiry,
	     uint64_t expires_ns);
/* Removes the key with this public part; false if there was none. */
bool keys_remove(struct agent_keys *k, enum agent_key_type type, const uint8_t *point);
void keys_remove_all(struct agent_keys *k);
/* Removes every key whose lifetime ended at or before now; the count. */
unsigned keys_reap(struct agent_keys *k, uint64_t now_ns);
/* The earliest expiry of any key, or UINT64_MAX. */
uint64_t keys_next_expiry(const struct agent_keys *k);

#endif

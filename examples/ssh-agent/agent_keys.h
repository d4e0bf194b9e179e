/* SPDX-License-Identifier: ISC */
/*
 * The agent's key store: up to AGENT_KEYS_MAX P-256 keys, in the order
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
	uint8_t d[AGENT_P256_SCALAR];     /* private scalar, big-endian */
	uint8_t point[AGENT_P256_POINT];  /* public key */
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
/* The key with this public point, or NULL. */
struct agent_key *keys_find(struct agent_keys *k, const uint8_t point[AGENT_P256_POINT]);
/* Adds a key, or replaces the one with the same point (its comment and
 * lifetime too, as OpenSSH's agent does). Returns 0, or -1 when full. */
int keys_add(struct agent_keys *k, const uint8_t d[AGENT_P256_SCALAR],
	     const uint8_t point[AGENT_P256_POINT], const void *comment, size_t comment_len,
	     bool has_expiry, uint64_t expires_ns);
/* Removes the key with this point; false if there was none. */
bool keys_remove(struct agent_keys *k, const uint8_t point[AGENT_P256_POINT]);
void keys_remove_all(struct agent_keys *k);
/* Removes every key whose lifetime ended at or before now; the count. */
unsigned keys_reap(struct agent_keys *k, uint64_t now_ns);
/* The earliest expiry of any key, or UINT64_MAX. */
uint64_t keys_next_expiry(const struct agent_keys *k);

#endif

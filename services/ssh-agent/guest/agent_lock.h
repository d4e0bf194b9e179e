/* SPDX-License-Identifier: ISC */
/*
 * Locking the agent with a passphrase (ssh-add -x / -X). While locked the
 * agent lists no keys and refuses every request but UNLOCK. The
 * passphrase itself is never kept: only a random salt and
 * HMAC-SHA256(salt, passphrase), compared in constant time.
 */
#ifndef AGENT_LOCK_H
#define AGENT_LOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AGENT_LOCK_SALT 16
#define AGENT_LOCK_HASH 32

struct agent_lock {
	bool locked;
	uint8_t salt[AGENT_LOCK_SALT];
	uint8_t hash[AGENT_LOCK_HASH];
};

/* Locks with salt (AGENT_LOCK_SALT random bytes); false if already locked. */
bool lock_engage(struct agent_lock *l, const uint8_t salt[AGENT_LOCK_SALT],
		 const void *pass, size_t len);
/* Unlocks if pass matches; false if not locked or it does not match. */
bool lock_release(struct agent_lock *l, const void *pass, size_t len);

#endif

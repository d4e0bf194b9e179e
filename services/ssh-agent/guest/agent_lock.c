/* SPDX-License-Identifier: ISC */
/* Agent lock: see agent_lock.h. HMAC-SHA256 is BearSSL's. */
#include "agent_lock.h"

#include <string.h>

#include <bearssl/bearssl_hmac.h>

#include "wipe.h"

static void pass_hash(const uint8_t salt[AGENT_LOCK_SALT], const void *pass, size_t len,
		      uint8_t out[AGENT_LOCK_HASH])
{
	br_hmac_key_context kc;
	br_hmac_context c;
	br_hmac_key_init(&kc, &br_sha256_vtable, salt, AGENT_LOCK_SALT);
	br_hmac_init(&c, &kc, 0);
	br_hmac_update(&c, pass, len);
	br_hmac_out(&c, out);
	/* Both contexts hold state derived from the passphrase. */
	wipe(&c, sizeof c);
	wipe(&kc, sizeof kc);
}

/* Constant time: the time taken does not depend on where a and b differ. */
static bool equal_ct(const uint8_t *a, const uint8_t *b, size_t n)
{
	volatile uint8_t diff = 0;
	for (size_t i = 0; i < n; i++)
		diff |= a[i] ^ b[i];
	return diff == 0;
}

bool lock_engage(struct agent_lock *l, const uint8_t salt[AGENT_LOCK_SALT],
		 const void *pass, size_t len)
{
	if (l->locked)
		return false;
	memcpy(l->salt, salt, AGENT_LOCK_SALT);
	pass_hash(l->salt, pass, len, l->hash);
	l->locked = true;
	return true;
}

bool lock_release(struct agent_lock *l, const void *pass, size_t len)
{
	if (!l->locked)
		return false;
	uint8_t h[AGENT_LOCK_HASH];
	pass_hash(l->salt, pass, len, h);
	bool ok = equal_ct(h, l->hash, AGENT_LOCK_HASH);
	wipe(h, sizeof h);
	if (ok)
		wipe(l, sizeof *l);
	return ok;
}

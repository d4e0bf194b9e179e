/* SPDX-License-Identifier: ISC */
/* The key store: see agent_keys.h. Slots [0, n) are in use, in the order
 * the keys were added; removing one moves the later ones down and wipes
 * the slot left free at the end. */
#include "agent_keys.h"

#include <string.h>

#include "wipe.h"

void keys_init(struct agent_keys *k)
{
	wipe(k, sizeof *k);
}

struct agent_key *keys_find(struct agent_keys *k, enum agent_key_type type, const uint8_t *point)
{
	size_t n = agent_pub_len(type);
	for (unsigned i = 0; n && i < k->n; i++)
		if (k->slot[i].type == type && !memcmp(k->slot[i].point, point, n))
			return &k->slot[i];
	return NULL;
}

int keys_add(struct agent_keys *k, enum agent_key_type type, const uint8_t d[AGENT_SECRET_MAX],
	     const uint8_t *point, const void *comment, size_t comment_len, bool has_expiry,
	     uint64_t expires_ns)
{
	if (comment_len > AGENT_COMMENT_MAX || !agent_pub_len(type))
		return -1;
	struct agent_key *s = keys_find(k, type, point);
	if (!s) {
		if (k->n == AGENT_KEYS_MAX)
			return -1;
		s = &k->slot[k->n++];
	}
	wipe(s, sizeof *s);
	s->type = type;
	memcpy(s->d, d, AGENT_SECRET_MAX);
	memcpy(s->point, point, agent_pub_len(type));
	if (comment_len)
		memcpy(s->comment, comment, comment_len);
	s->comment_len = (uint16_t)comment_len;
	s->has_expiry = has_expiry;
	s->expires_ns = expires_ns;
	return 0;
}

static void remove_at(struct agent_keys *k, unsigned i)
{
	if (i + 1 < k->n)
		memmove(&k->slot[i], &k->slot[i + 1], (k->n - i - 1) * sizeof k->slot[0]);
	k->n--;
	wipe(&k->slot[k->n], sizeof k->slot[0]);
}

bool keys_remove(struct agent_keys *k, enum agent_key_type type, const uint8_t *point)
{
	struct agent_key *s = keys_find(k, type, point);
	if (!s)
		return false;
	remove_at(k, (unsigned)(s - k->slot));
	return true;
}

void keys_remove_all(struct agent_keys *k)
{
	wipe(k, sizeof *k);
}

unsigned keys_reap(struct agent_keys *k, uint64_t now_ns)
{
	unsigned gone = 0;
	for (unsigned i = 0; i < k->n;) {
		if (k->slot[i].has_expiry && k->slot[i].expires_ns <= now_ns) {
			remove_at(k, i);
			gone++;
		} else {
			i++;
		}
	}
	return gone;
}

uint64_t keys_next_expiry(const struct agent_keys *k)
{
	uint64_t t = UINT64_MAX;
	for (unsigned i = 0; i < k->n; i++)
		if (k->slot[i].has_expiry && k->slot[i].expires_ns < t)
			t = k->slot[i].expires_ns;
	return t;
}

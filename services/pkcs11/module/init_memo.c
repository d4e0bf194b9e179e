/* SPDX-License-Identifier: ISC */
/* Deferred C_SignInit, C_EncryptInit and C_DecryptInit calls: see
 * init_memo.h. */
#include "init_memo.h"

#include <string.h>

struct memo {
	bool known;    /* the token accepted init */
	bool active;   /* the token has an operation of this kind on the session (or may have) */
	bool deferred; /* init is deferred: not sent yet */
	struct init_call init;
};

struct slot {
	bool used;
	CK_SESSION_HANDLE session;
	struct memo m[INIT_KINDS];
};

static struct slot slots[INIT_MEMO_SLOTS];
static unsigned next_evict;

static struct slot *find(CK_SESSION_HANDLE s)
{
	for (unsigned i = 0; i < INIT_MEMO_SLOTS; i++)
		if (slots[i].used && slots[i].session == s)
			return &slots[i];
	return NULL;
}

static struct memo *memo(CK_SESSION_HANDLE s, enum init_kind k)
{
	struct slot *e = find(s);
	return e && k < INIT_KINDS ? &e->m[k] : NULL;
}

static bool aes_mode(CK_MECHANISM_TYPE m)
{
	return m == CKM_AES_ECB || m == CKM_AES_CBC || m == CKM_AES_CBC_PAD || m == CKM_AES_CTR || m == CKM_AES_GCM;
}

bool init_call_make(struct init_call *i, enum init_kind kind, CK_SESSION_HANDLE s, CK_MECHANISM_TYPE mech,
		    const void *param, size_t plen, CK_OBJECT_HANDLE key)
{
	if (kind >= INIT_KINDS || plen > INIT_MEMO_PARAM || (!param && plen) || (kind != INIT_SIGN && !aes_mode(mech)))
		return false;
	memset(i, 0, sizeof *i);
	i->session = s;
	i->kind = kind;
	i->mech = mech;
	i->key = key;
	i->plen = (uint32_t)plen;
	if (plen)
		memcpy(i->param, param, plen);
	return true;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The flattened CK_GCM_PARAMS (p11_wire.h): u64 ulIvBits, u64 ulTagBits,
 * u32 the IV's length (what can make an init fail), the IV, then u32 the
 * AAD's length and the AAD (which cannot). */
#define GCM_FIXED (8 + 8 + 4)

/* Whether GCM parameter b, whose fixed part is a's, is whole: the AAD's
 * length is what is left. */
static bool gcm_whole(const struct init_call *b)
{
	uint32_t iv = be32(b->param + 16);
	return b->plen >= GCM_FIXED + 4 && iv <= b->plen - GCM_FIXED - 4 &&
	       be32(b->param + GCM_FIXED + iv) == b->plen - GCM_FIXED - 4 - iv;
}

/* Whether parameter b may stand for a (the one the token accepted): see
 * init_memo.h. */
static bool same_param(const struct init_call *a, const struct init_call *b)
{
	if (a->kind != INIT_SIGN) {
		switch (a->mech) {
		case CKM_AES_CBC:
		case CKM_AES_CBC_PAD: /* the IV alone */
			return a->plen == b->plen;
		case CKM_AES_CTR: /* ulCounterBits, then the counter block */
			return a->plen == b->plen && a->plen >= sizeof(CK_ULONG) &&
			       !memcmp(a->param, b->param, sizeof(CK_ULONG));
		case CKM_AES_GCM:
			return a->plen >= GCM_FIXED && b->plen >= GCM_FIXED &&
			       !memcmp(a->param, b->param, GCM_FIXED) && gcm_whole(b);
		default:
			break;
		}
	}
	return a->plen == b->plen && !memcmp(a->param, b->param, a->plen);
}

static bool same(const struct init_call *a, const struct init_call *b)
{
	return a->session == b->session && a->kind == b->kind && a->mech == b->mech && a->key == b->key &&
	       same_param(a, b);
}

bool init_memo_defer(const struct init_call *i)
{
	struct memo *e = memo(i->session, i->kind);
	if (!e || !e->known || e->active || e->deferred || !same(&e->init, i))
		return false;
	e->deferred = true;
	e->init = *i; /* its IV, counter block or AAD may be new */
	return true;
}

bool init_memo_deferred(CK_SESSION_HANDLE s, enum init_kind k)
{
	struct memo *e = memo(s, k);
	return e && e->deferred;
}

bool init_memo_take(CK_SESSION_HANDLE s, enum init_kind k, struct init_call *i)
{
	struct memo *e = memo(s, k);
	if (!e || !e->deferred)
		return false;
	e->deferred = false;
	e->active = true; /* on its way; the reply says whether it goes on */
	*i = e->init;
	return true;
}

static bool waits(const struct slot *e)
{
	for (unsigned k = 0; k < INIT_KINDS; k++)
		if (e->m[k].deferred)
			return true;
	return false;
}

static bool holds_nothing(const struct slot *e)
{
	for (unsigned k = 0; k < INIT_KINDS; k++)
		if (e->m[k].known || e->m[k].active || e->m[k].deferred)
			return false;
	return true;
}

/* A slot for session s: a free one, else one whose session has no
 * deferred init (its next init is only slower: a deferred one must stay
 * for the call that sends it), else none. */
static struct slot *claim(CK_SESSION_HANDLE s)
{
	struct slot *e = NULL;
	for (unsigned k = 0; k < INIT_MEMO_SLOTS && !e; k++)
		if (!slots[k].used || holds_nothing(&slots[k]))
			e = &slots[k];
	for (unsigned k = 0; k < INIT_MEMO_SLOTS && !e; k++) {
		struct slot *c = &slots[next_evict++ % INIT_MEMO_SLOTS];
		if (!waits(c))
			e = c;
	}
	if (e)
		*e = (struct slot){ .used = true, .session = s };
	return e;
}

void init_memo_accepted(const struct init_call *i)
{
	struct slot *e = find(i->session);
	if (!e)
		e = claim(i->session);
	if (e && i->kind < INIT_KINDS)
		e->m[i->kind] = (struct memo){ .known = true, .active = true, .init = *i };
}

void init_memo_refused(CK_SESSION_HANDLE s, enum init_kind k)
{
	struct memo *e = memo(s, k);
	if (e)
		memset(e, 0, sizeof *e);
}

void init_memo_active(CK_SESSION_HANDLE s, enum init_kind k, bool active)
{
	struct memo *e = memo(s, k);
	if (e)
		e->active = active;
}

void init_memo_drop(CK_SESSION_HANDLE s)
{
	struct slot *e = find(s);
	if (e)
		memset(e, 0, sizeof *e);
}

void init_memo_unsure(void)
{
	for (unsigned i = 0; i < INIT_MEMO_SLOTS; i++)
		for (unsigned k = 0; k < INIT_KINDS; k++)
			slots[i].m[k].known = false;
}

void init_memo_clear(void)
{
	memset(slots, 0, sizeof slots);
}

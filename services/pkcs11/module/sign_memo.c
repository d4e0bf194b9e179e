/* SPDX-License-Identifier: ISC */
/* Deferred C_SignInit calls: see sign_memo.h. */
#include "sign_memo.h"

#include <string.h>

struct slot {
	bool used;
	bool known;    /* the token accepted init */
	bool active;   /* the token has an operation on the session (or may have) */
	bool deferred; /* init is deferred: not sent yet */
	struct sign_init init;
};

static struct slot slots[SIGN_MEMO_SLOTS];
static unsigned next_evict;

static struct slot *find(CK_SESSION_HANDLE s)
{
	for (unsigned i = 0; i < SIGN_MEMO_SLOTS; i++)
		if (slots[i].used && slots[i].init.session == s)
			return &slots[i];
	return NULL;
}

bool sign_init_make(struct sign_init *i, CK_SESSION_HANDLE s, const CK_MECHANISM *m, CK_OBJECT_HANDLE key)
{
	if (!m || m->ulParameterLen > SIGN_MEMO_PARAM || (!m->pParameter && m->ulParameterLen))
		return false;
	memset(i, 0, sizeof *i);
	i->session = s;
	i->mech = m->mechanism;
	i->key = key;
	i->plen = (uint32_t)m->ulParameterLen;
	if (i->plen)
		memcpy(i->param, m->pParameter, i->plen);
	return true;
}

static bool same(const struct sign_init *a, const struct sign_init *b)
{
	return a->session == b->session && a->mech == b->mech && a->key == b->key && a->plen == b->plen &&
	       !memcmp(a->param, b->param, a->plen);
}

bool sign_memo_defer(const struct sign_init *i)
{
	struct slot *e = find(i->session);
	if (!e || !e->known || e->active || e->deferred || !same(&e->init, i))
		return false;
	e->deferred = true;
	return true;
}

bool sign_memo_deferred(CK_SESSION_HANDLE s)
{
	struct slot *e = find(s);
	return e && e->deferred;
}

bool sign_memo_take(CK_SESSION_HANDLE s, struct sign_init *i)
{
	struct slot *e = find(s);
	if (!e || !e->deferred)
		return false;
	e->deferred = false;
	e->active = true; /* on its way; the reply says whether it goes on */
	*i = e->init;
	return true;
}

void sign_memo_accepted(const struct sign_init *i)
{
	struct slot *e = find(i->session);
	if (!e) {
		for (unsigned k = 0; k < SIGN_MEMO_SLOTS && !e; k++)
			if (!slots[k].used)
				e = &slots[k];
		if (!e) /* full: one goes (only its next C_SignInit is slower) */
			e = &slots[next_evict++ % SIGN_MEMO_SLOTS];
	}
	*e = (struct slot){ .used = true, .known = true, .active = true, .init = *i };
}

void sign_memo_refused(CK_SESSION_HANDLE s)
{
	sign_memo_drop(s);
}

void sign_memo_active(CK_SESSION_HANDLE s, bool active)
{
	struct slot *e = find(s);
	if (e)
		e->active = active;
}

void sign_memo_drop(CK_SESSION_HANDLE s)
{
	struct slot *e = find(s);
	if (e)
		memset(e, 0, sizeof *e);
}

void sign_memo_unsure(void)
{
	for (unsigned i = 0; i < SIGN_MEMO_SLOTS; i++)
		slots[i].known = false;
}

void sign_memo_clear(void)
{
	memset(slots, 0, sizeof slots);
}

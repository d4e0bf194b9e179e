/* SPDX-License-Identifier: ISC */
/*
 * The token's persistent store: see p11_persist.h. The store keeps one
 * blob, the token objects as p11_objects_save makes them; session
 * objects never reach it. The data key stays in this guest's private
 * memory from the first successful login until the guest stops.
 */
#include "p11_persist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "entropy.h"
#include "service.h"
#include "wipe.h"
#include "cloak/block.h"
#include "cloak/guest.h"
#include "store.h"

/* Session objects made before the first login take handles from here, so
 * the stored token objects, loaded later, keep theirs. */
#define PRELOGIN_HANDLES 0xf0000000u

static struct {
	struct cloak_block blk;
	struct p11_store st;
	br_hmac_drbg_context drbg;
	bool formatted; /* the device holds a store */
	bool unlocked;  /* st holds the data key */
	/* The stored set as last read or committed (0 bytes: none, as after
	 * a format or before the first login). */
	size_t last_len;
	uint8_t last[P11_STORE_BLOB_MAX];
	uint8_t blob[P11_STORE_BLOB_MAX];
} p;

/* The test hook --test-stall-commit (p11_persist.h): the device's write,
 * wrapped. Sectors 0 and 1 hold the store's two headers, the rest its data
 * slots (docs/pkcs11-store.md, "On-disk format"); a commit writes and
 * flushes its data, then writes a header. */
static struct {
	bool armed, data_written;
	int (*write)(void *ctx, uint64_t sector, const void *buf, uint32_t count);
} stall;

static int stall_write(void *ctx, uint64_t sector, const void *buf, uint32_t count)
{
	if (sector >= 2) {
		stall.data_written = true;
	} else if (stall.data_written) {
		printf("pkcs11: test hook: a commit's data is written and flushed, its header is not; "
		       "stalling\n");
		for (;;)
			cloak_poll(NS_PER_S, 0, NULL);
	}
	return stall.write(ctx, sector, buf, count);
}

void p11_persist_stall_commit(void)
{
	stall.armed = true;
}

static void store_random(void *ctx, void *buf, size_t n)
{
	(void)ctx;
	br_hmac_drbg_generate(&p.drbg, buf, n);
}

static void say(const char *what, int err)
{
	printf("pkcs11: token store: %s: %s%s\n", what, p11_store_strerror(err),
	       err == P11_STORE_ETAMPERED || err == P11_STORE_ECORRUPT
		       ? "; the image was changed outside the token: restore it from a backup, or "
			 "initialise a new token over it (cloak-pkcs11 init -f; its keys are lost)"
		       : "");
}

static CK_RV rv_of(int err)
{
	switch (err) {
	case P11_STORE_OK: return CKR_OK;
	case P11_STORE_EPIN: return CKR_PIN_INCORRECT;
	case P11_STORE_ELOCKED: return CKR_PIN_LOCKED;
	case P11_STORE_EPINLEN: return CKR_PIN_LEN_RANGE;
	case P11_STORE_ENOMEM:
	case P11_STORE_ETOOBIG: return CKR_DEVICE_MEMORY;
	default: return CKR_DEVICE_ERROR;
	}
}

/* Replaces t's token objects by the blob's (0 bytes: none), keeping its
 * session objects. keep_next: t's handle counter goes on (a roll-back),
 * else the blob's takes over (the first load). False if the blob is
 * malformed or the objects do not fit; t is then unchanged. */
static bool load(struct p11_token *t, const uint8_t *blob, size_t len, bool keep_next)
{
	struct p11_objects *n = malloc(sizeof *n);
	if (!n)
		return false;
	bool ok = true;
	if (len)
		ok = p11_objects_load(n, blob, len);
	else
		p11_objects_init(n);
	unsigned j = 0;
	for (unsigned i = 0; ok && i < P11_OBJECTS_MAX; i++) {
		const struct p11_object *o = &t->objects.o[i];
		if (!o->handle || !o->session)
			continue;
		while (j < P11_OBJECTS_MAX && n->o[j].handle)
			j++;
		if (j == P11_OBJECTS_MAX || p11_objects_get(n, o->handle))
			ok = false;
		else
			memcpy(&n->o[j], o, sizeof *o);
	}
	if (ok) {
		if (keep_next || (!len && t->objects.next_handle < PRELOGIN_HANDLES))
			n->next_handle = t->objects.next_handle;
		memcpy(&t->objects, n, sizeof *n);
	}
	wipe(n, sizeof *n);
	free(n);
	return ok;
}

/* Runs fn on a copy of the store, so a failure (a wrong PIN forgets the
 * data key) leaves an unlocked store unlocked; the header (a try spent or
 * restored) is kept either way. */
static int on_copy(int (*fn)(struct p11_store *, const void *), const void *arg)
{
	static struct p11_store c;
	memcpy(&c, &p.st, sizeof c);
	int r = fn(&c, arg);
	if (r == P11_STORE_OK || !p.unlocked) {
		memcpy(&p.st, &c, sizeof c);
	} else {
		memcpy(p.st.hdr, c.hdr, sizeof c.hdr);
		p.st.hslot = c.hslot;
		p.st.broken = c.broken;
	}
	wipe(&c, sizeof c);
	return r;
}

struct pin_arg {
	enum p11_store_role role;
	const uint8_t *pin, *new_pin;
	uint32_t len, new_len;
};

static int do_unlock(struct p11_store *st, const void *arg)
{
	const struct pin_arg *a = arg;
	return p11_store_unlock(st, a->role, (const char *)a->pin, a->len);
}

static int do_change(struct p11_store *st, const void *arg)
{
	const struct pin_arg *a = arg;
	return p11_store_change_pin(st, a->role, (const char *)a->pin, a->len,
				    (const char *)a->new_pin, a->new_len);
}

static enum p11_store_role role_of(unsigned long who)
{
	return who == CKU_SO ? P11_STORE_SO : P11_STORE_USER;
}

static CK_RV ps_login(void *ctx, struct p11_token *t, unsigned long who, const uint8_t *pin,
		      uint32_t len)
{
	(void)ctx;
	if (!p.formatted)
		return CKR_USER_PIN_NOT_INITIALIZED;
	struct pin_arg a = { role_of(who), pin, NULL, len, 0 };
	int r = on_copy(do_unlock, &a);
	if (r == P11_STORE_EPINLEN)
		return CKR_PIN_INCORRECT;
	if (r) {
		if (r != P11_STORE_EPIN && r != P11_STORE_ELOCKED)
			say("login refused", r);
		return rv_of(r);
	}
	if (p.unlocked)
		return CKR_OK;
	size_t n;
	r = p11_store_read(&p.st, p.last, sizeof p.last, &n);
	if (r == P11_STORE_OK && !load(t, p.last, n, false))
		r = P11_STORE_ETAMPERED; /* authentic but not a set this token wrote */
	if (r) {
		say("cannot read the token objects", r);
		wipe(p.last, sizeof p.last);
		p.last_len = 0;
		p11_store_lock(&p.st);
		return rv_of(r);
	}
	p.last_len = n;
	p.unlocked = true;
	return CKR_OK;
}

static CK_RV ps_commit(void *ctx, struct p11_token *t)
{
	(void)ctx;
	size_t n = p11_objects_save(&t->objects, p.blob, sizeof p.blob);
	/* The blob ends with the handle counter, which session objects move
	 * too: alone it is no change. 16 bytes: a set without objects. */
	if (n && (p.last_len ? n == p.last_len && !memcmp(p.blob, p.last, n - 4) : n == 16)) {
		wipe(p.blob, n);
		return CKR_OK;
	}
	CK_RV rv;
	if (!n) {
		rv = CKR_DEVICE_MEMORY;
	} else if (!p.unlocked) {
		rv = CKR_USER_NOT_LOGGED_IN; /* no key to store with yet */
	} else {
		int r = p11_store_commit(&p.st, p.blob, n);
		if (r)
			say("cannot store the token objects", r);
		rv = rv_of(r);
	}
	if (rv == CKR_OK) {
		memcpy(p.last, p.blob, n);
		p.last_len = n;
	} else if (!load(t, p.last, p.last_len, true)) {
		/* Cannot happen: the set loaded or stored before. */
		printf("pkcs11: token store: cannot restore the stored objects\n");
		cloak_exit(70);
	}
	wipe(p.blob, sizeof p.blob);
	return rv;
}

_Static_assert(P11_STORE_ID_LEN >= P11_SERIAL / 2, "a serial from the store id");

/* The token's serial number: from the store's id, which a format draws
 * and nothing else changes. */
static void serial_of_store(uint8_t serial[P11_SERIAL])
{
	struct p11_store_info info;
	p11_store_get_info(&p.st, &info);
	p11_serial_of(info.id, serial);
}

static CK_RV ps_init_token(void *ctx, const uint8_t *so_pin, uint32_t len, const uint8_t *label,
			   uint8_t serial[P11_SERIAL])
{
	(void)ctx;
	if (p.formatted) {
		struct pin_arg a = { P11_STORE_SO, so_pin, NULL, len, 0 };
		int r = on_copy(do_unlock, &a);
		if (r)
			return rv_of(r == P11_STORE_EPINLEN ? P11_STORE_EPIN : r);
	}
	/* The user PIN is random until C_InitPIN sets it. */
	uint8_t user[32];
	char lab[P11_STORE_LABEL_LEN + 1];
	memcpy(lab, label, P11_STORE_LABEL_LEN);
	lab[P11_STORE_LABEL_LEN] = '\0';
	store_random(NULL, user, sizeof user);
	int r = p11_store_format(&p.st.dev, lab, (const char *)so_pin, len, (const char *)user,
				 sizeof user, NULL);
	wipe(user, sizeof user);
	struct p11_store_dev dev = p.st.dev;
	p11_store_close(&p.st);
	p.unlocked = false;
	p.last_len = 0;
	if (r == P11_STORE_OK)
		r = p11_store_open(&p.st, &dev);
	if (r) {
		say("cannot initialise", r);
		p.formatted = false;
		return rv_of(r);
	}
	p.formatted = true;
	serial_of_store(serial);
	return CKR_OK;
}

static CK_RV ps_init_pin(void *ctx, const uint8_t *pin, uint32_t len)
{
	(void)ctx;
	if (!p.unlocked)
		return CKR_USER_NOT_LOGGED_IN;
	/* The token checked the SO's login; the store's key is one for
	 * both roles. */
	p.st.unlocked = P11_STORE_SO;
	return rv_of(p11_store_init_pin(&p.st, (const char *)pin, len));
}

static CK_RV ps_set_pin(void *ctx, unsigned long who, const uint8_t *old, uint32_t olen,
			const uint8_t *pin, uint32_t len)
{
	(void)ctx;
	struct pin_arg a = { role_of(who), old, pin, olen, len };
	int r = on_copy(do_change, &a);
	return rv_of(r == P11_STORE_EPINLEN ? P11_STORE_EPIN : r);
}

static CK_FLAGS ps_pin_flags(void *ctx)
{
	(void)ctx;
	if (!p.formatted)
		return 0;
	static const CK_FLAGS f[2][3] = {
		{ CKF_USER_PIN_COUNT_LOW, CKF_USER_PIN_FINAL_TRY, CKF_USER_PIN_LOCKED },
		{ CKF_SO_PIN_COUNT_LOW, CKF_SO_PIN_FINAL_TRY, CKF_SO_PIN_LOCKED },
	};
	struct p11_store_info info;
	p11_store_get_info(&p.st, &info);
	CK_FLAGS flags = 0;
	for (unsigned r = 0; r < 2; r++) {
		uint32_t left = info.tries_left[r];
		if (left < P11_STORE_TRIES)
			flags |= f[r][0];
		if (left == 1)
			flags |= f[r][1];
		if (left == 0)
			flags |= f[r][2];
	}
	return flags;
}

static const struct p11_persist persist = {
	ps_login, ps_commit, ps_init_token, ps_init_pin, ps_set_pin, ps_pin_flags, NULL,
};

int p11_persist_open(struct p11_token *t, const struct p11_persist **ps, char *report,
		     size_t report_len)
{
	*ps = NULL;
	int r = cloak_block_open(P11_PERSIST_DEVICE, &p.blk);
	if (r == -CLOAK_ENOENT) {
		snprintf(report, report_len, "no store: objects last until the guest stops");
		return 0;
	}
	if (r < 0) {
		printf("pkcs11: token store: cannot open block device '" P11_PERSIST_DEVICE "' (%d)\n", r);
		return 1;
	}
	char why[96];
	if (entropy_seed(&p.drbg, why, sizeof why) <= 0) {
		printf("pkcs11: token store: no entropy source works (%s)\n", why);
		return 1;
	}
	struct p11_store_dev dev;
	r = p11_store_dev_cloak_block(&dev, &p.blk, store_random, NULL);
	if (r == P11_STORE_OK && stall.armed) {
		stall.write = dev.write;
		dev.write = stall_write;
	}
	if (r == P11_STORE_OK)
		r = p11_store_open(&p.st, &dev);
	if (r == P11_STORE_EBLANK) {
		/* A new image: C_InitToken formats it. */
		p.st.dev = dev;
		snprintf(report, report_len, "store: blank (initialise the token)");
		*ps = &persist;
		return 0;
	}
	if (r) {
		printf("pkcs11: token store: refused: %s; the image is not one this token wrote "
		       "intact: restore it from a backup, or initialise a new token over it (its "
		       "keys are lost)\n",
		       p11_store_strerror(r));
		return 1;
	}
	struct p11_store_info info;
	p11_store_get_info(&p.st, &info);
	p.formatted = true;
	t->initialized = true;
	t->so.set = t->user.set = true;
	memcpy(t->label, info.label, P11_LABEL);
	serial_of_store(t->serial);
	t->objects.next_handle = PRELOGIN_HANDLES;
	snprintf(report, report_len, "store: generation %llu, tries left user %u SO %u",
		 (unsigned long long)info.generation, info.tries_left[0], info.tries_left[1]);
	*ps = &persist;
	return 0;
}

/* SPDX-License-Identifier: ISC */
/*
 * Unit tests of the PKCS#11 token's store (services/pkcs11/guest/store.c,
 * docs/pkcs11-store.md) on a memory device that can crash: it stops after
 * the N-th sector write, and the image left behind is what a disk with a
 * volatile write cache could hold then (everything, only what was flushed,
 * the last write alone landing ahead of earlier ones, or a torn last
 * sector). Every update is cut at every write, under every such outcome,
 * and the store reopened must be the old one or the new one.
 *
 * The PIN derivations use Argon2id's least cost (1 pass, 8 KiB) to keep
 * the loops fast; one test runs the default cost.
 * `test_p11_store --time-kdf` prints how long the default derivation takes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <sodium.h>

#include "store.h"

/* The format's offsets the tests reach into (docs/pkcs11-store.md). */
enum { H_SEQ = 16, H_TRIES = 24, H_ID = 32, H_DSLOT = 88, H_MAC = 312, H_SUM = 344, H_END = 376 };

static const struct p11_store_kdf FAST = { 1, P11_STORE_KDF_MEM_KIB_MIN };
#define SO "so-secret"
#define USER "1234"
#define PIN(s) s, sizeof s - 1

/* ---- the memory device ---- */

enum policy { ALL, FLUSHED, LAST_ONLY, TORN, TORN_ONLY, NPOLICY };
static const char *policy_name[NPOLICY] = { "all", "flushed", "last-only", "torn", "torn-only" };

struct wlog {
	uint64_t sector;
	uint8_t *data;
	int flushed;
};

struct fake {
	uint32_t ss;
	uint64_t sectors;  /* what the device says */
	uint64_t readable; /* sectors reads reach (an image truncated behind its back) */
	uint8_t *img;      /* every write applied */
	uint8_t *base;     /* the image when armed */
	struct wlog *log;
	size_t nlog;
	long crash_after; /* sector writes before the device stops; -1 never */
	long writes;
	int dead;
	unsigned flushes;
	long fail_writes_from; /* a write error (not a crash) from this write on; -1 never */
};

static int f_read(void *ctx, uint64_t sector, void *buf, uint32_t count)
{
	struct fake *f = ctx;
	if (sector > f->readable || count > f->readable - sector)
		return -1;
	memcpy(buf, f->img + sector * f->ss, (size_t)count * f->ss);
	return 0;
}

static int f_write(void *ctx, uint64_t sector, const void *buf, uint32_t count)
{
	struct fake *f = ctx;
	assert_true(sector <= f->sectors && count <= f->sectors - sector);
	for (uint32_t i = 0; i < count; i++) {
		if (f->dead || (f->fail_writes_from >= 0 && f->writes >= f->fail_writes_from))
			return -1;
		const uint8_t *p = (const uint8_t *)buf + (size_t)i * f->ss;
		f->log = realloc(f->log, (f->nlog + 1) * sizeof *f->log);
		assert_non_null(f->log);
		f->log[f->nlog] = (struct wlog){ sector + i, malloc(f->ss), 0 };
		assert_non_null(f->log[f->nlog].data);
		memcpy(f->log[f->nlog++].data, p, f->ss);
		memcpy(f->img + (sector + i) * f->ss, p, f->ss);
		if (++f->writes == f->crash_after)
			f->dead = 1;
	}
	return 0;
}

static int f_flush(void *ctx)
{
	struct fake *f = ctx;
	if (f->dead)
		return -1;
	for (size_t i = 0; i < f->nlog; i++)
		f->log[i].flushed = 1;
	f->flushes++;
	return 0;
}

static void f_random(void *ctx, void *buf, size_t n)
{
	randombytes_buf(buf, n);
}

static void fake_init(struct fake *f, uint32_t ss)
{
	memset(f, 0, sizeof *f);
	f->ss = ss;
	f->sectors = f->readable = P11_STORE_MIN_BYTES(ss) / ss;
	f->img = calloc(f->sectors, ss);
	f->base = calloc(f->sectors, ss);
	assert_non_null(f->img);
	assert_non_null(f->base);
	f->crash_after = f->fail_writes_from = -1;
}

static void log_clear(struct fake *f)
{
	for (size_t i = 0; i < f->nlog; i++)
		free(f->log[i].data);
	free(f->log);
	f->log = NULL;
	f->nlog = 0;
}

static void fake_free(struct fake *f)
{
	log_clear(f);
	free(f->img);
	free(f->base);
}

/* Starts recording: the image now is what a crash falls back to. */
static void fake_arm(struct fake *f, long crash_after)
{
	log_clear(f);
	memcpy(f->base, f->img, f->sectors * f->ss);
	f->crash_after = crash_after;
	f->writes = 0;
	f->dead = 0;
}

/* Replaces the image with what the disk holds after the crash, under
 * policy, and revives the device. */
static void fake_crash(struct fake *f, enum policy p)
{
	uint8_t *img = f->base;
	size_t last = f->nlog - 1;
	int last_pending = f->nlog && !f->log[last].flushed;
	for (size_t i = 0; i < f->nlog; i++) {
		struct wlog *w = &f->log[i];
		uint8_t *to = img + w->sector * f->ss;
		int pending_before_last = !w->flushed && i != last;
		if (p == FLUSHED && !w->flushed)
			continue;
		if ((p == LAST_ONLY || p == TORN_ONLY) && pending_before_last)
			continue;
		if ((p == TORN || p == TORN_ONLY) && i == last && last_pending) {
			memcpy(to, w->data, f->ss / 2); /* the sector's first half landed */
			continue;
		}
		memcpy(to, w->data, f->ss);
	}
	memcpy(f->img, img, f->sectors * f->ss);
	memcpy(f->base, f->img, f->sectors * f->ss);
	log_clear(f);
	f->crash_after = -1;
	f->dead = 0;
}

static struct p11_store_dev dev_of(struct fake *f)
{
	return (struct p11_store_dev){ f, f->ss, f->sectors, f_read, f_write, f_flush, f_random, NULL };
}

/* ---- helpers ---- */

static void format(struct fake *f)
{
	struct p11_store_dev d = dev_of(f);
	assert_int_equal(p11_store_format(&d, "cloak token", PIN(SO), PIN(USER), &FAST), 0);
}

static void new_store(struct fake *f, uint32_t ss)
{
	fake_init(f, ss);
	format(f);
}

static void open_unlock(struct fake *f, struct p11_store *st, enum p11_store_role role,
			const char *pin, size_t len)
{
	struct p11_store_dev d = dev_of(f);
	assert_int_equal(p11_store_open(st, &d), 0);
	assert_int_equal(p11_store_unlock(st, role, pin, len), 0);
}

/* Opens the store on f and, for a role >= 0, unlocks it. */
static int open_as(struct fake *f, struct p11_store *st, int role, const char *pin, size_t len)
{
	struct p11_store_dev d = dev_of(f);
	int r = p11_store_open(st, &d);
	if (!r && role >= 0)
		r = p11_store_unlock(st, (enum p11_store_role)role, pin, len);
	return r;
}

static void commit_blob(struct fake *f, const void *blob, size_t len)
{
	struct p11_store st;
	open_unlock(f, &st, P11_STORE_USER, PIN(USER));
	assert_int_equal(p11_store_commit(&st, blob, len), 0);
	p11_store_close(&st);
}

static uint8_t rbuf[P11_STORE_BLOB_MAX];

/* The blob, read back with the user PIN; its length, or a negative error. */
static long read_blob(struct fake *f, const char *pin, size_t pinlen)
{
	struct p11_store st;
	size_t n = 0;
	int r = open_as(f, &st, P11_STORE_USER, pin, pinlen);
	if (!r)
		r = p11_store_read(&st, rbuf, sizeof rbuf, &n);
	p11_store_close(&st);
	return r ? r : (long)n;
}

static uint32_t tries(struct fake *f, enum p11_store_role role)
{
	struct p11_store st;
	struct p11_store_dev d = dev_of(f);
	struct p11_store_info info;
	assert_int_equal(p11_store_open(&st, &d), 0);
	p11_store_get_info(&st, &info);
	p11_store_close(&st);
	return info.tries_left[role];
}

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7 + (i >> 8));
}

static int contains(const uint8_t *hay, size_t n, const void *needle, size_t m)
{
	for (size_t i = 0; i + m <= n; i++)
		if (!memcmp(hay + i, needle, m))
			return 1;
	return 0;
}

/* The sector of the header in force, by seq (both valid in these tests). */
static uint8_t *newest_header(struct fake *f)
{
	uint8_t *a = f->img, *b = f->img + f->ss;
	uint64_t sa = 0, sb = 0;
	memcpy(&sa, a + H_SEQ, 8); /* little-endian host */
	memcpy(&sb, b + H_SEQ, 8);
	return sb > sa ? b : a;
}

static void fix_checksum(uint8_t *h)
{
	crypto_generichash_blake2b(h + H_SUM, 32, h, H_SUM, NULL, 0);
}

/* ---- tests ---- */

static void test_roundtrip(void **state)
{
	static const uint32_t sizes[] = { 512, 4096 };
	static uint8_t blob[P11_STORE_BLOB_MAX];
	for (unsigned s = 0; s < 2; s++) {
		struct fake f;
		fake_init(&f, sizes[s]);
		struct p11_store st;
		struct p11_store_dev d = dev_of(&f);
		assert_int_equal(p11_store_open(&st, &d), P11_STORE_EBLANK);
		format(&f);
		assert_int_equal(read_blob(&f, PIN(USER)), 0);

		open_unlock(&f, &st, P11_STORE_USER, PIN(USER));
		struct p11_store_info info;
		p11_store_get_info(&st, &info);
		assert_memory_equal(info.label, "cloak token                     ", 32);
		assert_int_equal(info.generation, 1);
		assert_int_equal(info.tries_left[0], P11_STORE_TRIES);
		assert_int_equal(info.kdf[0].ops, FAST.ops);
		for (size_t len = 1; len <= P11_STORE_BLOB_MAX; len = len * 3 + 1) {
			fill(blob, len, (uint8_t)len);
			assert_int_equal(p11_store_commit(&st, blob, len), 0);
			size_t n;
			assert_int_equal(p11_store_read(&st, rbuf, sizeof rbuf, &n), 0);
			assert_int_equal(n, len);
			assert_memory_equal(rbuf, blob, len);
		}
		fill(blob, sizeof blob, 9);
		assert_int_equal(p11_store_commit(&st, blob, sizeof blob), 0);
		assert_int_equal(p11_store_commit(&st, blob, sizeof blob + 1), P11_STORE_ETOOBIG);
		p11_store_close(&st);
		assert_int_equal(read_blob(&f, PIN(USER)), (long)sizeof blob);
		assert_memory_equal(rbuf, blob, sizeof blob);
		/* The SO reads the same blob. */
		open_unlock(&f, &st, P11_STORE_SO, PIN(SO));
		size_t n;
		assert_int_equal(p11_store_read(&st, rbuf, sizeof rbuf - 1, &n), P11_STORE_ETOOBIG);
		assert_int_equal(p11_store_read(&st, rbuf, sizeof rbuf, &n), 0);
		assert_int_equal(n, sizeof blob);
		p11_store_close(&st);
		fake_free(&f);
	}
}

/* The host sees ciphertext only: no run of the blob, no PIN, no key. */
static void test_host_sees_ciphertext(void **state)
{
	struct fake f;
	fake_init(&f, 512);
	struct p11_store_dev d = dev_of(&f);
	assert_int_equal(p11_store_format(&d, "t", PIN(SO), PIN("user-pin-0042"), &FAST), 0);
	uint8_t blob[4096];
	fill(blob, sizeof blob, 1);
	struct p11_store st;
	open_unlock(&f, &st, P11_STORE_USER, PIN("user-pin-0042"));
	assert_int_equal(p11_store_commit(&st, blob, sizeof blob), 0);
	size_t n = f.sectors * f.ss;
	for (size_t i = 0; i + 16 <= sizeof blob; i += 16)
		assert_false(contains(f.img, n, blob + i, 16));
	assert_false(contains(f.img, n, "user-pin-0042", 13));
	assert_false(contains(f.img, n, SO, 9));
	assert_false(contains(f.img, n, st.key, 32));
	p11_store_close(&st);
	fake_free(&f);
}

static void test_wrong_pin_counter(void **state)
{
	struct fake f;
	new_store(&f, 512);
	struct p11_store st;
	struct p11_store_dev d = dev_of(&f);
	assert_int_equal(p11_store_open(&st, &d), 0);
	assert_int_equal(p11_store_unlock(&st, P11_STORE_USER, PIN("1235")), P11_STORE_EPIN);
	assert_int_equal(st.unlocked, -1);
	p11_store_close(&st);
	/* The spent try is on the disk. */
	assert_int_equal(tries(&f, P11_STORE_USER), P11_STORE_TRIES - 1);
	assert_int_equal(tries(&f, P11_STORE_SO), P11_STORE_TRIES);
	/* A right PIN restores the tries. */
	assert_int_equal(read_blob(&f, PIN(USER)), 0);
	assert_int_equal(tries(&f, P11_STORE_USER), P11_STORE_TRIES);

	/* Every wrong PIN counts, across reopens, down to the lock. */
	for (unsigned i = 0; i < P11_STORE_TRIES; i++) {
		assert_int_equal(p11_store_open(&st, &d), 0);
		assert_int_equal(p11_store_unlock(&st, P11_STORE_USER, PIN("0000")), P11_STORE_EPIN);
		p11_store_close(&st);
		assert_int_equal(tries(&f, P11_STORE_USER), P11_STORE_TRIES - 1 - i);
	}
	assert_int_equal(read_blob(&f, PIN(USER)), P11_STORE_ELOCKED);
	assert_int_equal(tries(&f, P11_STORE_USER), 0);
	/* The SO is not locked, and C_InitPIN unlocks the user. */
	open_unlock(&f, &st, P11_STORE_SO, PIN(SO));
	assert_int_equal(p11_store_init_pin(&st, PIN("4321")), 0);
	p11_store_close(&st);
	assert_int_equal(tries(&f, P11_STORE_USER), P11_STORE_TRIES);
	assert_int_equal(read_blob(&f, PIN(USER)), P11_STORE_EPIN);
	assert_int_equal(read_blob(&f, PIN("4321")), 0);

	/* The SO locks as the user does. */
	for (unsigned i = 0; i < P11_STORE_TRIES; i++) {
		assert_int_equal(p11_store_open(&st, &d), 0);
		assert_int_equal(p11_store_unlock(&st, P11_STORE_SO, PIN(USER)), P11_STORE_EPIN);
		p11_store_close(&st);
	}
	assert_int_equal(p11_store_open(&st, &d), 0);
	assert_int_equal(p11_store_unlock(&st, P11_STORE_SO, PIN(SO)), P11_STORE_ELOCKED);
	p11_store_close(&st);
	fake_free(&f);
}

/* A try is spent on the disk before the derivation: a guest killed while
 * it derives (here: the device dies at the next write, as the right PIN
 * would restore the tries) has still used it, even with the right PIN. */
static void test_try_spent_before_derivation(void **state)
{
	static const struct { const char *pin; size_t len; int want; } c[] = {
		{ PIN(USER), P11_STORE_EIO },
		{ PIN("9999"), P11_STORE_EPIN },
	};
	for (unsigned i = 0; i < 2; i++) {
		struct fake f;
		new_store(&f, 512);
		struct p11_store st;
		struct p11_store_dev d = dev_of(&f);
		assert_int_equal(p11_store_open(&st, &d), 0);
		/* The first write (the spent try) lands and is flushed; then
		 * the guest is gone. */
		fake_arm(&f, -1);
		f.fail_writes_from = 1;
		assert_int_equal(p11_store_unlock(&st, P11_STORE_USER, c[i].pin, c[i].len), c[i].want);
		p11_store_close(&st);
		fake_crash(&f, FLUSHED);
		assert_int_equal(tries(&f, P11_STORE_USER), P11_STORE_TRIES - 1);
		fake_free(&f);
	}
}

/* The store id (the token's serial number comes from it) stays the same
 * through commits, PIN changes and reopening, and is new after a format. */
static void store_id(struct fake *f, uint8_t id[P11_STORE_ID_LEN])
{
	struct p11_store st;
	struct p11_store_dev d = dev_of(f);
	struct p11_store_info info;
	assert_int_equal(p11_store_open(&st, &d), 0);
	p11_store_get_info(&st, &info);
	p11_store_close(&st);
	memcpy(id, info.id, P11_STORE_ID_LEN);
}

static void test_store_id_stable(void **state)
{
	struct fake f;
	new_store(&f, 512);
	uint8_t first[P11_STORE_ID_LEN], again[P11_STORE_ID_LEN], zero[P11_STORE_ID_LEN] = { 0 };
	store_id(&f, first);
	assert_memory_not_equal(first, zero, sizeof zero);
	uint8_t blob[100];
	fill(blob, sizeof blob, 9);
	commit_blob(&f, blob, sizeof blob);
	struct p11_store st;
	struct p11_store_dev d = dev_of(&f);
	assert_int_equal(p11_store_open(&st, &d), 0);
	assert_int_equal(p11_store_change_pin(&st, P11_STORE_USER, PIN(USER), PIN("5678")), 0);
	p11_store_close(&st);
	store_id(&f, again);
	assert_memory_equal(first, again, sizeof first);
	format(&f); /* a new token over the old one */
	store_id(&f, again);
	assert_memory_not_equal(first, again, sizeof first);
}

static void test_change_pin_rewraps_only(void **state)
{
	struct fake f;
	new_store(&f, 512);
	uint8_t blob[1000];
	fill(blob, sizeof blob, 3);
	commit_blob(&f, blob, sizeof blob);
	size_t data_off = 2 * (size_t)f.ss;
	size_t data_len = f.sectors * f.ss - data_off;
	uint8_t *before = malloc(data_len);
	assert_non_null(before);
	memcpy(before, f.img + data_off, data_len);

	struct p11_store st;
	struct p11_store_dev d = dev_of(&f);
	assert_int_equal(p11_store_open(&st, &d), 0);
	assert_int_equal(p11_store_change_pin(&st, P11_STORE_USER, PIN("bad"), PIN("5678")),
			 P11_STORE_EPIN);
	assert_int_equal(p11_store_change_pin(&st, P11_STORE_USER, PIN(USER), "", 0),
			 P11_STORE_EPINLEN);
	assert_int_equal(p11_store_change_pin(&st, P11_STORE_USER, PIN(USER), PIN("5678")), 0);
	assert_int_equal(st.unlocked, P11_STORE_USER);
	p11_store_close(&st);
	/* Only the header changed: the blob was not re-encrypted. */
	assert_memory_equal(f.img + data_off, before, data_len);
	free(before);
	assert_int_equal(tries(&f, P11_STORE_USER), P11_STORE_TRIES);
	assert_int_equal(read_blob(&f, PIN(USER)), P11_STORE_EPIN);
	assert_int_equal(read_blob(&f, PIN("5678")), (long)sizeof blob);
	assert_memory_equal(rbuf, blob, sizeof blob);
	/* The SO's PIN is untouched and can change too. */
	assert_int_equal(p11_store_open(&st, &d), 0);
	assert_int_equal(p11_store_change_pin(&st, P11_STORE_SO, PIN(SO), PIN("new-so")), 0);
	p11_store_close(&st);
	assert_int_equal(p11_store_open(&st, &d), 0);
	assert_int_equal(p11_store_unlock(&st, P11_STORE_SO, PIN(SO)), P11_STORE_EPIN);
	assert_int_equal(p11_store_unlock(&st, P11_STORE_SO, PIN("new-so")), 0);
	p11_store_close(&st);
	assert_int_equal(read_blob(&f, PIN("5678")), (long)sizeof blob);
	fake_free(&f);
}

static void test_refusals(void **state)
{
	struct fake f;
	fake_init(&f, 512);
	struct p11_store_dev d = dev_of(&f);
	char big[P11_STORE_PIN_MAX + 1];
	memset(big, 'x', sizeof big);
	assert_int_equal(p11_store_format(&d, "t", PIN(SO), "", 0, &FAST), P11_STORE_EPINLEN);
	assert_int_equal(p11_store_format(&d, "t", big, sizeof big, PIN(USER), &FAST),
			 P11_STORE_EPINLEN);
	assert_int_equal(p11_store_format(&d, "123456789012345678901234567890123", PIN(SO), PIN(USER),
					  &FAST),
			 P11_STORE_EINVAL);
	struct p11_store_kdf k = { 0, 8 };
	assert_int_equal(p11_store_format(&d, "t", PIN(SO), PIN(USER), &k), P11_STORE_EINVAL);
	k = (struct p11_store_kdf){ 1, P11_STORE_KDF_MEM_KIB_MAX + 1 };
	assert_int_equal(p11_store_format(&d, "t", PIN(SO), PIN(USER), &k), P11_STORE_EINVAL);
	d.sectors--;
	assert_int_equal(p11_store_format(&d, "t", PIN(SO), PIN(USER), &FAST), P11_STORE_EDEVICE);
	d.sectors++;
	d.sector_size = 1024;
	assert_int_equal(p11_store_format(&d, "t", PIN(SO), PIN(USER), &FAST), P11_STORE_EDEVICE);
	d.sector_size = 512;
	struct p11_store st;
	memset(&st, 0, sizeof st);
	assert_int_equal(p11_store_unlock(&st, P11_STORE_USER, PIN(USER)), P11_STORE_EINVAL);
	assert_int_equal(p11_store_unlock(NULL, P11_STORE_USER, PIN(USER)), P11_STORE_EINVAL);
	assert_int_equal(p11_store_open(&st, &d), P11_STORE_EBLANK);
	assert_int_equal(p11_store_unlock(&st, P11_STORE_USER, PIN(USER)), P11_STORE_EINVAL);
	format(&f);

	assert_int_equal(p11_store_open(&st, &d), 0);
	size_t n;
	uint8_t b[8] = { 0 };
	assert_int_equal(p11_store_read(&st, rbuf, sizeof rbuf, &n), P11_STORE_ESTATE);
	assert_int_equal(p11_store_commit(&st, b, sizeof b), P11_STORE_ESTATE);
	assert_int_equal(p11_store_init_pin(&st, PIN("1")), P11_STORE_ESTATE);
	assert_int_equal(p11_store_unlock(&st, 2, PIN(USER)), P11_STORE_EINVAL);
	assert_int_equal(p11_store_unlock(&st, P11_STORE_USER, big, sizeof big), P11_STORE_EPINLEN);
	assert_int_equal(p11_store_unlock(&st, P11_STORE_USER, PIN(USER)), 0);
	/* Only the SO sets the user PIN. */
	assert_int_equal(p11_store_init_pin(&st, PIN("1")), P11_STORE_ESTATE);
	/* Logged out: the key is gone. */
	p11_store_lock(&st);
	uint8_t zero[32] = { 0 };
	assert_memory_equal(st.key, zero, 32);
	assert_int_equal(p11_store_read(&st, rbuf, sizeof rbuf, &n), P11_STORE_ESTATE);
	p11_store_close(&st);
	/* Closed: nothing of the store is left in the struct. */
	const uint8_t *raw = (const uint8_t *)&st;
	for (size_t i = 0; i < sizeof st; i++)
		if (raw + i < (const uint8_t *)&st.unlocked ||
		    raw + i >= (const uint8_t *)&st.unlocked + sizeof st.unlocked)
			assert_int_equal(raw[i], 0);
	assert_string_equal(p11_store_strerror(P11_STORE_EPIN), "wrong PIN");
	fake_free(&f);
}

/* After a failed write the store takes no call until reopened. */
static void test_write_error_needs_reopen(void **state)
{
	struct fake f;
	new_store(&f, 512);
	struct p11_store st;
	open_unlock(&f, &st, P11_STORE_USER, PIN(USER));
	uint8_t blob[100] = { 1 };
	fake_arm(&f, -1);
	f.fail_writes_from = 1; /* the data sector lands, the header does not */
	assert_int_equal(p11_store_commit(&st, blob, sizeof blob), P11_STORE_EIO);
	f.fail_writes_from = -1;
	assert_int_equal(p11_store_commit(&st, blob, sizeof blob), P11_STORE_EIO);
	size_t n;
	assert_int_equal(p11_store_read(&st, rbuf, sizeof rbuf, &n), P11_STORE_EIO);
	uint8_t zero[32] = { 0 };
	assert_memory_equal(st.key, zero, 32);
	p11_store_close(&st);
	assert_int_equal(read_blob(&f, PIN(USER)), 0);
	fake_free(&f);
}

/* ---- crash safety ---- */

struct op {
	const char *name;
	/* Runs the update on f; returns its result. */
	int (*run)(struct fake *f);
	/* 1 if f holds the store from before the update, 2 if the one after,
	 * 0 for anything else (a failure of the test). */
	int (*which)(struct fake *f);
	int uncut; /* which() after the update ran whole */
};

static uint8_t old_blob[6000], new_blob[5000];

static int run_commit(struct fake *f)
{
	struct p11_store st;
	int r = open_as(f, &st, P11_STORE_USER, PIN(USER));
	if (!r)
		r = p11_store_commit(&st, new_blob, sizeof new_blob);
	p11_store_close(&st);
	return r;
}

static int which_blob(long n)
{
	if (n == sizeof old_blob && !memcmp(rbuf, old_blob, n))
		return 1;
	if (n == sizeof new_blob && !memcmp(rbuf, new_blob, n))
		return 2;
	return 0;
}

static int which_commit(struct fake *f)
{
	return which_blob(read_blob(f, PIN(USER)));
}

static int run_change_pin(struct fake *f)
{
	struct p11_store st;
	int r = open_as(f, &st, -1, NULL, 0);
	if (!r)
		r = p11_store_change_pin(&st, P11_STORE_USER, PIN(USER), PIN("5678"));
	p11_store_close(&st);
	return r;
}

static int which_pin(struct fake *f)
{
	/* A wrong try spends one; there are plenty. */
	long n = read_blob(f, PIN(USER));
	int w = 1;
	if (n == P11_STORE_EPIN) {
		n = read_blob(f, PIN("5678"));
		w = 2;
	}
	return which_blob(n) == 1 ? w : 0;
}

static int run_init_pin(struct fake *f)
{
	struct p11_store st;
	int r = open_as(f, &st, P11_STORE_SO, PIN(SO));
	if (!r)
		r = p11_store_init_pin(&st, PIN("5678"));
	p11_store_close(&st);
	return r;
}

static int run_unlock(struct fake *f)
{
	struct p11_store st;
	int r = open_as(f, &st, P11_STORE_USER, PIN(USER));
	p11_store_close(&st);
	return r;
}

static int which_unlock(struct fake *f)
{
	uint32_t t = tries(f, P11_STORE_USER);
	long n = read_blob(f, PIN(USER));
	if (n != sizeof old_blob || memcmp(rbuf, old_blob, n))
		return 0;
	return t == P11_STORE_TRIES ? 1 : t == P11_STORE_TRIES - 1 ? 2 : 0;
}

static int run_format(struct fake *f)
{
	struct p11_store_dev d = dev_of(f);
	return p11_store_format(&d, "new", PIN("so2"), PIN("user2"), &FAST);
}

static int which_format(struct fake *f)
{
	if (which_commit(f) == 1)
		return 1;
	long n = read_blob(f, PIN("user2"));
	return n == 0 ? 2 : 0;
}

static void crash_every_write(const struct op *op, uint32_t ss)
{
	struct fake f;
	fake_init(&f, ss);
	format(&f);
	fill(old_blob, sizeof old_blob, 0x11);
	fill(new_blob, sizeof new_blob, 0x77);
	commit_blob(&f, old_blob, sizeof old_blob);
	uint8_t *start = malloc(f.sectors * f.ss);
	assert_non_null(start);
	memcpy(start, f.img, f.sectors * f.ss);

	/* Uncut, to count the writes and check the outcome. */
	fake_arm(&f, -1);
	assert_int_equal(op->run(&f), 0);
	long total = f.writes;
	assert_int_equal(op->which(&f), op->uncut);
	unsigned seen[3] = { 0 };
	for (long n = 1; n <= total; n++) {
		for (int p = 0; p < NPOLICY; p++) {
			memcpy(f.img, start, f.sectors * f.ss);
			fake_arm(&f, n);
			int r = op->run(&f);
			fake_crash(&f, (enum policy)p);
			int w = op->which(&f);
			if (!w)
				fail_msg("%s, %u-byte sectors: cut after write %ld of %ld (%s): "
					 "neither the old store nor the new (run gave %d)",
					 op->name, ss, n, total, policy_name[p], r);
			seen[w]++;
		}
	}
	/* Both outcomes occur: the cut points span the update. */
	assert_true(seen[1] > 0);
	assert_true(seen[2] > 0);
	free(start);
	fake_free(&f);
}

static const struct op ops[] = {
	{ "commit", run_commit, which_commit, 2 },
	{ "change_pin", run_change_pin, which_pin, 2 },
	{ "init_pin", run_init_pin, which_pin, 2 },
	/* 1: tries as before (none spent, or spent and restored); 2: spent */
	{ "unlock", run_unlock, which_unlock, 1 },
	{ "format", run_format, which_format, 2 },
};

static void test_crash_commit(void **state)
{
	crash_every_write(&ops[0], 512);
	crash_every_write(&ops[0], 4096);
}

static void test_crash_pins_unlock_format(void **state)
{
	for (unsigned i = 1; i < sizeof ops / sizeof ops[0]; i++)
		crash_every_write(&ops[i], 512);
}

/* ---- tampering ---- */

static int only_errors(long r, const int *ok, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (r == ok[i])
			return 1;
	return 0;
}

/* A store with one valid header (the other sector zeroed, so nothing
 * falls back to it) and a blob. */
static void tamper_setup(struct fake *f, uint8_t *blob, size_t len)
{
	new_store(f, 512);
	commit_blob(f, blob, len);
	assert_int_equal(read_blob(f, PIN(USER)), (long)len);
	uint8_t *h = newest_header(f);
	uint8_t *other = h == f->img ? f->img + f->ss : f->img;
	memset(other, 0, f->ss);
}

static void test_tamper_header(void **state)
{
	struct fake f;
	uint8_t blob[300];
	fill(blob, sizeof blob, 5);
	tamper_setup(&f, blob, sizeof blob);
	uint8_t *clean = malloc(f.sectors * f.ss);
	assert_non_null(clean);
	memcpy(clean, f.img, f.sectors * f.ss);
	uint8_t *h = newest_header(&f);
	size_t off = (size_t)(h - f.img);
	static const int open_errors[] = { P11_STORE_EBLANK, P11_STORE_ECORRUPT };
	static const int auth_errors[] = { P11_STORE_EBLANK, P11_STORE_ECORRUPT,
					   P11_STORE_EVERSION, P11_STORE_EDEVICE,
					   P11_STORE_EPIN, P11_STORE_ETAMPERED };
	for (size_t i = 0; i < H_END; i++) {
		for (int fix = 0; fix < 2; fix++) {
			memcpy(f.img, clean, f.sectors * f.ss);
			f.img[off + i] ^= 0x01;
			/* The host can recompute the checksum; only the MAC
			 * and the AEAD then stand in its way. */
			if (fix && i < H_SUM)
				fix_checksum(f.img + off);
			long r = read_blob(&f, PIN(USER));
			if (fix && i >= H_SEQ && i < H_ID) {
				/* seq and tries: not authenticated (docs). */
				if (r != (long)sizeof blob && r != P11_STORE_ECORRUPT)
					fail_msg("byte %zu: %ld", i, r);
			} else if (!fix) {
				if (!only_errors(r, open_errors, 2))
					fail_msg("byte %zu, checksum stale: %ld", i, r);
			} else if (!only_errors(r, auth_errors, 6)) {
				fail_msg("byte %zu flipped, checksum fixed: %ld", i, r);
			}
		}
	}
	free(clean);
	fake_free(&f);
}

static void test_tamper_data(void **state)
{
	struct fake f;
	uint8_t blob[1300];
	fill(blob, sizeof blob, 6);
	tamper_setup(&f, blob, sizeof blob);
	uint8_t *h = newest_header(&f);
	uint32_t slot = h[H_DSLOT];
	size_t doff = (2 + (size_t)slot * ((P11_STORE_BLOB_MAX + 16 + 511) / 512)) * 512;
	for (size_t i = 0; i < sizeof blob + 16; i++) {
		f.img[doff + i] ^= 0x80;
		assert_int_equal(read_blob(&f, PIN(USER)), P11_STORE_ETAMPERED);
		f.img[doff + i] ^= 0x80;
	}
	assert_int_equal(read_blob(&f, PIN(USER)), (long)sizeof blob);
	fake_free(&f);
}

/* Slots swapped, a header rolled back alone, the image truncated, the
 * sector size changed: each refused. Header and data rolled back together
 * is a whole older store, which the store cannot tell (docs). */
static void test_tamper_swap_roll_truncate(void **state)
{
	struct fake f;
	new_store(&f, 512);
	size_t dslot = (P11_STORE_BLOB_MAX + 16 + 511) / 512 * 512;
	size_t img = f.sectors * f.ss;
	uint8_t *gen2 = malloc(img), *tmp = malloc(dslot);
	assert_non_null(gen2);
	assert_non_null(tmp);
	uint8_t b2[700], b3[800], b4[900];
	fill(b2, sizeof b2, 2);
	fill(b3, sizeof b3, 3);
	fill(b4, sizeof b4, 4);
	commit_blob(&f, b2, sizeof b2);
	memcpy(gen2, f.img, img);
	uint8_t h2[512];
	memcpy(h2, newest_header(&f), 512);
	commit_blob(&f, b3, sizeof b3);
	commit_blob(&f, b4, sizeof b4);
	/* Each read below writes headers (a try spent and restored): every
	 * case starts again from this image. */
	uint8_t *cur = malloc(img);
	assert_non_null(cur);
	memcpy(cur, f.img, img);

	/* Swap the data slots. */
	uint8_t *d0 = f.img + 2 * 512, *d1 = d0 + dslot;
	memcpy(tmp, d0, dslot);
	memcpy(d0, d1, dslot);
	memcpy(d1, tmp, dslot);
	assert_int_equal(read_blob(&f, PIN(USER)), P11_STORE_ETAMPERED);
	memcpy(f.img, cur, img);
	assert_int_equal(read_blob(&f, PIN(USER)), (long)sizeof b4);
	memcpy(f.img, cur, img);

	/* The header sectors swapped: seq, not the place, says which is in
	 * force, so this is the same store. */
	memcpy(tmp, f.img, 512);
	memcpy(f.img, f.img + 512, 512);
	memcpy(f.img + 512, tmp, 512);
	assert_int_equal(read_blob(&f, PIN(USER)), (long)sizeof b4);
	assert_memory_equal(rbuf, b4, sizeof b4);
	memcpy(f.img, cur, img);

	/* The header of generation 2, put back in force over newer data
	 * (its seq raised, its checksum fixed, as a host could). */
	uint8_t *h = newest_header(&f);
	uint64_t seq;
	memcpy(&seq, h + H_SEQ, 8);
	memcpy(h, h2, 512);
	seq += 10;
	memcpy(h + H_SEQ, &seq, 8);
	fix_checksum(h);
	assert_int_equal(read_blob(&f, PIN(USER)), P11_STORE_ETAMPERED);
	memcpy(f.img, cur, img);

	/* The header's MAC from another header (the other slot's). */
	uint8_t *other = h == f.img ? f.img + 512 : f.img;
	memcpy(h + H_MAC, other + H_MAC, 32);
	fix_checksum(h);
	assert_int_equal(read_blob(&f, PIN(USER)), P11_STORE_ETAMPERED);
	memcpy(f.img, cur, img);
	assert_int_equal(read_blob(&f, PIN(USER)), (long)sizeof b4);

	/* Truncated: the device says it is smaller, or reads stop short. */
	f.sectors--;
	assert_int_equal(read_blob(&f, PIN(USER)), P11_STORE_EDEVICE);
	f.sectors++;
	f.readable = 1;
	assert_int_equal(read_blob(&f, PIN(USER)), P11_STORE_EIO);
	f.readable = f.sectors;
	/* Opened as a device of 4096-byte sectors. */
	struct fake g;
	fake_init(&g, 4096);
	memcpy(g.img, f.img, img);
	assert_int_equal(read_blob(&g, PIN(USER)), P11_STORE_EDEVICE);
	fake_free(&g);

	/* Rolled back whole: an older store, which opens (docs: rollback). */
	memcpy(f.img, gen2, img);
	assert_int_equal(read_blob(&f, PIN(USER)), (long)sizeof b2);
	free(gen2);
	free(cur);
	free(tmp);
	fake_free(&f);
}

/* A header made up at the highest seq a store takes: unlocking it cannot
 * write the next header and says so; a format still replaces it. */
static void test_seq_limit(void **state)
{
	struct fake f;
	new_store(&f, 512);
	uint8_t *h = newest_header(&f);
	uint64_t seq = (1ull << 62) + 1; /* past it: no valid header */
	memcpy(h + H_SEQ, &seq, 8);
	fix_checksum(h);
	assert_int_equal(read_blob(&f, PIN(USER)), P11_STORE_ECORRUPT);
	seq--;
	memcpy(h + H_SEQ, &seq, 8);
	fix_checksum(h);
	struct p11_store st;
	struct p11_store_dev d = dev_of(&f);
	assert_int_equal(p11_store_open(&st, &d), 0);
	assert_int_equal(p11_store_unlock(&st, P11_STORE_USER, PIN(USER)), P11_STORE_ECORRUPT);
	p11_store_close(&st);
	assert_int_equal(p11_store_format(&d, "again", PIN(SO), PIN("user2"), &FAST), 0);
	assert_int_equal(read_blob(&f, PIN("user2")), 0);
	fake_free(&f);
}

/* The defaults: Argon2id, 3 passes over 16 MiB. */
static void test_default_kdf(void **state)
{
	struct fake f;
	fake_init(&f, 4096);
	struct p11_store_dev d = dev_of(&f);
	assert_int_equal(p11_store_format(&d, "t", PIN(SO), PIN(USER), NULL), 0);
	struct p11_store st;
	assert_int_equal(p11_store_open(&st, &d), 0);
	struct p11_store_info info;
	p11_store_get_info(&st, &info);
	assert_int_equal(info.kdf[P11_STORE_USER].ops, 3);
	assert_int_equal(info.kdf[P11_STORE_SO].mem_kib, 16384);
	assert_int_equal(p11_store_unlock(&st, P11_STORE_USER, PIN(USER)), 0);
	p11_store_close(&st);
	fake_free(&f);
}

/* --time-kdf: the default derivation's time, as unlock spends it: first
 * with libsodium's portable Argon2id (what a guest runs: it never calls
 * sodium_init(), which picks the SIMD ones), then with the best this CPU
 * has. */
static int time_unlock(const char *impl)
{
	struct fake f;
	fake_init(&f, 4096);
	struct p11_store_dev d = dev_of(&f);
	if (p11_store_format(&d, "t", PIN(SO), PIN(USER), NULL))
		return 1;
	double best = 1e9, sum = 0;
	const int runs = 10;
	for (int i = 0; i < runs; i++) {
		struct p11_store st;
		struct timespec a, b;
		p11_store_open(&st, &d);
		clock_gettime(CLOCK_MONOTONIC, &a);
		int r = p11_store_unlock(&st, P11_STORE_USER, PIN(USER));
		clock_gettime(CLOCK_MONOTONIC, &b);
		p11_store_close(&st);
		if (r)
			return 1;
		double ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
		sum += ms;
		best = ms < best ? ms : best;
	}
	printf("unlock, Argon2id ops %u mem %u KiB, %s: best %.1f ms, mean %.1f ms over %d\n",
	       P11_STORE_KDF_OPS, P11_STORE_KDF_MEM_KIB, impl, best, sum / runs, runs);
	fake_free(&f);
	return 0;
}

static int time_kdf(void)
{
	if (time_unlock("portable code"))
		return 1;
	if (sodium_init() < 0)
		return 1;
	return time_unlock("after sodium_init()");
}

/* --fuzz-seeds DIR: real stores in fuzz_p11_store's input format (a flags
 * byte, both header sectors, the first K bytes of each data slot). */
static int fuzz_seeds(const char *dir)
{
	enum { K = 1024 };
	size_t dslot = (P11_STORE_BLOB_MAX + 16 + 511) / 512 * 512;
	static const uint8_t flags[] = { 0, 1, 2, 4, 8, 4 | 8, 2 | 8 };
	uint8_t blob[600];
	fill(blob, sizeof blob, 8);
	int n = 0;
	for (int commits = 0; commits < 3; commits++) {
		struct fake f;
		new_store(&f, 512);
		for (int c = 0; c < commits; c++)
			commit_blob(&f, blob, sizeof blob - (size_t)c * 100);
		for (size_t i = 0; i < sizeof flags; i++) {
			char path[4096];
			snprintf(path, sizeof path, "%s/store-%d", dir, n++);
			FILE *out = fopen(path, "wb");
			if (!out)
				return 1;
			fputc(flags[i], out);
			fwrite(f.img, 1, 1024, out);
			fwrite(f.img + 1024, 1, K, out);
			fwrite(f.img + 1024 + dslot, 1, K, out);
			if (fclose(out))
				return 1;
		}
		fake_free(&f);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--time-kdf"))
		return time_kdf();
	if (argc > 2 && !strcmp(argv[1], "--fuzz-seeds"))
		return fuzz_seeds(argv[2]);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_host_sees_ciphertext),
		cmocka_unit_test(test_wrong_pin_counter),
		cmocka_unit_test(test_try_spent_before_derivation),
		cmocka_unit_test(test_store_id_stable),
		cmocka_unit_test(test_change_pin_rewraps_only),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_write_error_needs_reopen),
		cmocka_unit_test(test_crash_commit),
		cmocka_unit_test(test_crash_pins_unlock_format),
		cmocka_unit_test(test_tamper_header),
		cmocka_unit_test(test_tamper_data),
		cmocka_unit_test(test_tamper_swap_roll_truncate),
		cmocka_unit_test(test_seq_limit),
		cmocka_unit_test(test_default_kdf),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

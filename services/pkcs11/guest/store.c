/* SPDX-License-Identifier: ISC */
/*
 * The PKCS#11 token's persistent store: see store.h, and
 * docs/pkcs11-store.md for the format and the crash-safety argument.
 *
 * Layout, in sectors: 0 and 1 hold two copies of the header (A/B), each
 * written whole and checked by a BLAKE2b checksum, the newest valid one
 * (highest seq) in force; then two data slots of DSLOT sectors. An update
 * writes what the current header does not reference (the other data slot,
 * then the other header sector) and flushes after each, so a crash leaves
 * either the old header in force, with everything it references intact,
 * or the new one, whose data was durable before it was written.
 *
 * The cryptography is libsodium's: XChaCha20-Poly1305 for the blob and the
 * key wraps, Argon2id for the PIN derivations, BLAKE2b for the header MAC
 * and checksum. Built freestanding for the guest and for the host's tests.
 */
#include "store.h"

#include <stdlib.h>
#include <string.h>

#include <sodium/crypto_aead_xchacha20poly1305.h>
#include <sodium/crypto_generichash_blake2b.h>
#include <sodium/crypto_kdf_blake2b.h>
#include <sodium/crypto_pwhash_argon2id.h>
#include <sodium/crypto_verify_32.h>
#include <sodium/utils.h>

#define VERSION 1u
#define DSLOT(ss) ((P11_STORE_BLOB_MAX + TAG + (ss) - 1u) / (ss))
#define TAG crypto_aead_xchacha20poly1305_ietf_ABYTES
#define NONCE crypto_aead_xchacha20poly1305_ietf_NPUBBYTES
#define KEYLEN 32u
/* Every header write adds one to seq; no honest store comes near this, and
 * a header at it cannot be written after (the next would not be valid). */
#define SEQ_LIMIT (1ull << 62)
static const uint8_t MAGIC[8] = { 'C', 'L', 'O', 'A', 'K', 'P', '1', '1' };

/* Header fields (docs/pkcs11-store.md has the table). SEQ and TRIES change
 * without the data key (a try is spent before the PIN is known), so the
 * MAC leaves them out: it covers [0, H_MAC) with [H_SEQ, H_ID) zeroed. */
enum {
	H_MAGIC = 0,
	H_VERSION = 8,
	H_SECTOR = 12,
	H_SEQ = 16,
	H_TRIES = 24, /* user, then SO: 4 bytes each */
	H_ID = 32,
	H_LABEL = 48,
	H_GEN = 80,
	H_DSLOT = 88,
	H_DLEN = 92,
	H_DNONCE = 96,
	H_WRAP = 120, /* user, then SO: WRAP_LEN each */
	H_MAC = 312,
	H_SUM = 344,
	H_END = 376,
};
/* A wrap: salt, Argon2id ops and mem (KiB), nonce, the wrapped data key. */
enum { W_SALT = 0, W_OPS = 16, W_MEM = 20, W_NONCE = 24, W_KEY = 48, WRAP_LEN = 96 };
_Static_assert(W_KEY + KEYLEN + TAG == WRAP_LEN, "wrap layout");
_Static_assert(H_WRAP + 2 * WRAP_LEN == H_MAC, "header layout");
_Static_assert(H_END <= 512, "a header fits the smallest sector");
_Static_assert(H_LABEL - H_ID == P11_STORE_ID_LEN, "the store id's length");
_Static_assert(crypto_pwhash_argon2id_SALTBYTES == 16, "salt size");

/* Subkeys of the data key (crypto_kdf): the blob's AEAD key, the MAC's. */
enum { SUB_DATA = 1, SUB_MAC = 2 };
static const char KDF_CTX[crypto_kdf_blake2b_CONTEXTBYTES] = { 'p', '1', '1', 's', 't', 'o', 'r', 'e' };

static void put32(uint8_t *p, uint32_t v)
{
	for (unsigned i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v)
{
	for (unsigned i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get32(const uint8_t *p)
{
	uint32_t v = 0;
	for (unsigned i = 0; i < 4; i++)
		v |= (uint32_t)p[i] << (8 * i);
	return v;
}
static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static int dev_ok(const struct p11_store_dev *d)
{
	if (!d || !d->read || !d->write || !d->flush || !d->random)
		return P11_STORE_EINVAL;
	if (d->sector_size != 512 && d->sector_size != 4096)
		return P11_STORE_EDEVICE;
	if (d->sectors < 2 + 2 * (uint64_t)DSLOT(d->sector_size))
		return P11_STORE_EDEVICE;
	return P11_STORE_OK;
}

static uint64_t data_sector(const struct p11_store_dev *d, uint32_t slot)
{
	return 2 + (uint64_t)slot * DSLOT(d->sector_size);
}

static int kdf_ok(uint32_t ops, uint32_t mem_kib)
{
	return ops >= 1 && ops <= P11_STORE_KDF_OPS_MAX && mem_kib >= P11_STORE_KDF_MEM_KIB_MIN &&
	       mem_kib <= P11_STORE_KDF_MEM_KIB_MAX;
}

static void checksum(const uint8_t *h, uint8_t out[32])
{
	crypto_generichash_blake2b(out, 32, h, H_SUM, NULL, 0);
}

/* A header that can be in force: whole, of this version and geometry, its
 * fields in range. Says nothing of its authenticity (that needs the key). */
static int header_check(const uint8_t *h, const struct p11_store_dev *d)
{
	uint8_t sum[32];
	if (memcmp(h + H_MAGIC, MAGIC, sizeof MAGIC))
		return P11_STORE_EBLANK;
	checksum(h, sum);
	if (crypto_verify_32(sum, h + H_SUM))
		return P11_STORE_ECORRUPT;
	if (get32(h + H_VERSION) != VERSION)
		return P11_STORE_EVERSION;
	if (get32(h + H_SECTOR) != d->sector_size)
		return P11_STORE_EDEVICE;
	if (get64(h + H_SEQ) > SEQ_LIMIT || get32(h + H_DSLOT) > 1 ||
	    get32(h + H_DLEN) > P11_STORE_BLOB_MAX)
		return P11_STORE_ECORRUPT;
	for (unsigned r = 0; r < 2; r++) {
		const uint8_t *w = h + H_WRAP + r * WRAP_LEN;
		if (get32(h + H_TRIES + 4 * r) > P11_STORE_TRIES ||
		    !kdf_ok(get32(w + W_OPS), get32(w + W_MEM)))
			return P11_STORE_ECORRUPT;
	}
	return P11_STORE_OK;
}

/* Of two header errors, the one that says most about the device: a
 * version or geometry mismatch over corruption over blankness. */
static int worse(int a, int b)
{
	static const int rank[] = { P11_STORE_EBLANK, P11_STORE_ECORRUPT, P11_STORE_EDEVICE,
				    P11_STORE_EVERSION };
	int ra = 0, rb = 0;
	for (int i = 0; i < 4; i++) {
		if (a == rank[i])
			ra = i;
		if (b == rank[i])
			rb = i;
	}
	return ra >= rb ? a : b;
}

/* Reads both header sectors and picks the newest valid one into hdr. */
static int headers_read(const struct p11_store_dev *d, uint8_t hdr[512], uint8_t *hslot)
{
	uint8_t *buf = malloc(2 * (size_t)d->sector_size);
	if (!buf)
		return P11_STORE_ENOMEM;
	if (d->read(d->ctx, 0, buf, 2)) {
		free(buf);
		return P11_STORE_EIO;
	}
	const uint8_t *h[2] = { buf, buf + d->sector_size };
	int e[2] = { header_check(h[0], d), header_check(h[1], d) };
	int r;
	if (e[0] && e[1]) {
		r = worse(e[0], e[1]);
	} else {
		/* Both valid: the higher seq; equal seqs never happen (every
		 * write bumps it), and either is then as good. */
		unsigned pick = e[0] ? 1 : e[1] ? 0 : get64(h[1] + H_SEQ) > get64(h[0] + H_SEQ);
		memcpy(hdr, h[pick], 512);
		*hslot = (uint8_t)pick;
		r = P11_STORE_OK;
	}
	free(buf);
	return r;
}

/* Writes hdr (seq bumped, checksum set) to the header sector not in force,
 * flushes, and makes it the one in force. */
static int header_write(const struct p11_store_dev *d, uint8_t hdr[512], uint8_t *hslot)
{
	if (get64(hdr + H_SEQ) >= SEQ_LIMIT)
		return P11_STORE_ECORRUPT;
	uint8_t *buf = calloc(1, d->sector_size);
	if (!buf)
		return P11_STORE_ENOMEM;
	put64(hdr + H_SEQ, get64(hdr + H_SEQ) + 1);
	checksum(hdr, hdr + H_SUM);
	memcpy(buf, hdr, H_END);
	uint8_t to = (uint8_t)(*hslot ^ 1);
	int r = d->write(d->ctx, to, buf, 1) || d->flush(d->ctx) ? P11_STORE_EIO : P11_STORE_OK;
	free(buf);
	if (r == P11_STORE_OK)
		*hslot = to;
	return r;
}

/* Zeroes a header sector (the other store's, after a format) and flushes. */
static int header_clear(const struct p11_store_dev *d, unsigned sector)
{
	uint8_t *buf = calloc(1, d->sector_size);
	if (!buf)
		return P11_STORE_ENOMEM;
	int r = d->write(d->ctx, sector, buf, 1) || d->flush(d->ctx) ? P11_STORE_EIO : P11_STORE_OK;
	free(buf);
	return r;
}

static void subkey(uint8_t out[KEYLEN], unsigned id, const uint8_t key[KEYLEN])
{
	crypto_kdf_blake2b_derive_from_key(out, KEYLEN, id, KDF_CTX, key);
}

/* The header's MAC under the data key: every field but seq, tries and
 * the MAC and checksum themselves. */
static void header_mac(const uint8_t *hdr, const uint8_t key[KEYLEN], uint8_t out[32])
{
	uint8_t m[H_MAC], k[KEYLEN];
	memcpy(m, hdr, H_MAC);
	memset(m + H_SEQ, 0, H_ID - H_SEQ);
	subkey(k, SUB_MAC, key);
	crypto_generichash_blake2b(out, 32, m, H_MAC, k, KEYLEN);
	sodium_memzero(k, sizeof k);
}

/* The blob's associated data: magic, version, sector size, store id,
 * label, generation, slot and length. */
enum { DATA_AD_LEN = 16 + (H_DNONCE - H_ID) };
static void data_ad(const uint8_t *hdr, uint8_t ad[DATA_AD_LEN])
{
	memcpy(ad, hdr, 16);
	memcpy(ad + 16, hdr + H_ID, H_DNONCE - H_ID);
}

/* A wrap's associated data: magic and version, store id and label, the
 * role, and the wrap's salt and costs. */
enum { WRAP_AD_LEN = 12 + (H_GEN - H_ID) + 1 + W_NONCE };
static void wrap_ad(const uint8_t *hdr, unsigned role, uint8_t ad[WRAP_AD_LEN])
{
	memcpy(ad, hdr, 12);
	memcpy(ad + 12, hdr + H_ID, H_GEN - H_ID);
	ad[12 + H_GEN - H_ID] = (uint8_t)role;
	memcpy(ad + 13 + H_GEN - H_ID, hdr + H_WRAP + role * WRAP_LEN, W_NONCE);
}

static int pin_ok(const char *pin, size_t len)
{
	return pin && len >= 1 && len <= P11_STORE_PIN_MAX;
}

/* The key-encryption key of a wrap, from the PIN by Argon2id. */
static int derive(uint8_t kek[KEYLEN], const uint8_t *w, const char *pin, size_t len)
{
	if (crypto_pwhash_argon2id(kek, KEYLEN, pin, len, w + W_SALT, get32(w + W_OPS),
				   (size_t)get32(w + W_MEM) * 1024u, crypto_pwhash_argon2id_ALG_ARGON2ID13)) {
		sodium_memzero(kek, KEYLEN);
		return P11_STORE_ENOMEM; /* the only failure left once the costs are in range */
	}
	return P11_STORE_OK;
}

/* A new wrap of key for role under pin: fresh salt and nonce. */
static int wrap(const struct p11_store_dev *d, uint8_t *hdr, unsigned role,
		const struct p11_store_kdf *kdf, const char *pin, size_t len,
		const uint8_t key[KEYLEN])
{
	uint8_t *w = hdr + H_WRAP + role * WRAP_LEN, kek[KEYLEN], ad[WRAP_AD_LEN];
	d->random(d->random_ctx, w + W_SALT, 16);
	put32(w + W_OPS, kdf->ops);
	put32(w + W_MEM, kdf->mem_kib);
	d->random(d->random_ctx, w + W_NONCE, NONCE);
	int r = derive(kek, w, pin, len);
	if (r)
		return r;
	wrap_ad(hdr, role, ad);
	crypto_aead_xchacha20poly1305_ietf_encrypt(w + W_KEY, NULL, key, KEYLEN, ad, sizeof ad, NULL,
						   w + W_NONCE, kek);
	sodium_memzero(kek, sizeof kek);
	return P11_STORE_OK;
}

static int unwrap(const uint8_t *hdr, unsigned role, const char *pin, size_t len,
		  uint8_t key[KEYLEN])
{
	const uint8_t *w = hdr + H_WRAP + role * WRAP_LEN;
	uint8_t kek[KEYLEN], ad[WRAP_AD_LEN];
	int r = derive(kek, w, pin, len);
	if (r)
		return r;
	wrap_ad(hdr, role, ad);
	if (crypto_aead_xchacha20poly1305_ietf_decrypt(key, NULL, NULL, w + W_KEY, KEYLEN + TAG, ad,
						       sizeof ad, w + W_NONCE, kek))
		r = P11_STORE_EPIN;
	sodium_memzero(kek, sizeof kek);
	if (r)
		sodium_memzero(key, KEYLEN);
	return r;
}

/* Encrypts blob into the data slot the header in force does not use,
 * flushes, and fills in hdr's generation, slot, length and nonce (the MAC
 * and the header write are the caller's). */
static int data_write(const struct p11_store_dev *d, uint8_t *hdr, const uint8_t key[KEYLEN],
		      const void *blob, size_t len)
{
	uint32_t slot = get32(hdr + H_DSLOT) ^ 1;
	uint32_t ss = d->sector_size;
	size_t n = (len + TAG + ss - 1) / ss;
	uint8_t ad[DATA_AD_LEN], k[KEYLEN];
	uint8_t *ct = calloc(n, ss);
	if (!ct)
		return P11_STORE_ENOMEM;
	put64(hdr + H_GEN, get64(hdr + H_GEN) + 1);
	put32(hdr + H_DSLOT, slot);
	put32(hdr + H_DLEN, (uint32_t)len);
	d->random(d->random_ctx, hdr + H_DNONCE, NONCE);
	data_ad(hdr, ad);
	subkey(k, SUB_DATA, key);
	crypto_aead_xchacha20poly1305_ietf_encrypt(ct, NULL, blob, len, ad, sizeof ad, NULL,
						   hdr + H_DNONCE, k);
	sodium_memzero(k, sizeof k);
	int r = d->write(d->ctx, data_sector(d, slot), ct, (uint32_t)n) || d->flush(d->ctx)
			? P11_STORE_EIO
			: P11_STORE_OK;
	free(ct); /* ciphertext only: nothing to wipe */
	return r;
}

/* After a failed write or flush, what is on the disk is not known (a
 * header written but not flushed may yet be in force): the store refuses
 * every call until it is reopened, so no update can overwrite data such a
 * header references. */
static int failed(struct p11_store *st, int r)
{
	if (r == P11_STORE_EIO) {
		p11_store_lock(st);
		st->broken = 1;
	}
	return r;
}

/* Seals hdr under key (MAC) and writes it as the header in force. */
static int seal_and_write(struct p11_store *st, uint8_t *hdr, const uint8_t key[KEYLEN])
{
	header_mac(hdr, key, hdr + H_MAC);
	int r = header_write(&st->dev, hdr, &st->hslot);
	if (r == P11_STORE_OK)
		memcpy(st->hdr, hdr, sizeof st->hdr);
	return failed(st, r);
}

int p11_store_format(const struct p11_store_dev *dev, const char *label, const char *so_pin,
		     size_t so_len, const char *user_pin, size_t user_len,
		     const struct p11_store_kdf *kdf)
{
	static const struct p11_store_kdf def = { P11_STORE_KDF_OPS, P11_STORE_KDF_MEM_KIB };
	int r = dev_ok(dev);
	if (r)
		return r;
	if (!kdf)
		kdf = &def;
	if (!label || strlen(label) > P11_STORE_LABEL_LEN || !kdf_ok(kdf->ops, kdf->mem_kib))
		return P11_STORE_EINVAL;
	if (!pin_ok(so_pin, so_len) || !pin_ok(user_pin, user_len))
		return P11_STORE_EPINLEN;

	/* Over a store in force, write where a commit of it would, so its
	 * header and data stay whole; the new header starts at seq 1, so the
	 * old one stays in force until its sector is cleared, last. (Not
	 * old seq + 1: a made-up header at the seq limit would block every
	 * format.) */
	struct p11_store st = { .dev = *dev, .unlocked = -1 };
	uint8_t old[512];
	uint32_t dslot = 1; /* data_write takes the other one */
	if (headers_read(dev, old, &st.hslot) == P11_STORE_OK)
		dslot = get32(old + H_DSLOT);
	else
		st.hslot = 1; /* the first header goes to sector 0 */
	uint8_t hdr[512] = { 0 };
	memcpy(hdr + H_MAGIC, MAGIC, sizeof MAGIC);
	put32(hdr + H_VERSION, VERSION);
	put32(hdr + H_SECTOR, dev->sector_size);
	put32(hdr + H_TRIES, P11_STORE_TRIES);
	put32(hdr + H_TRIES + 4, P11_STORE_TRIES);
	dev->random(dev->random_ctx, hdr + H_ID, 16);
	memset(hdr + H_LABEL, ' ', P11_STORE_LABEL_LEN);
	memcpy(hdr + H_LABEL, label, strlen(label));
	put32(hdr + H_DSLOT, dslot);

	uint8_t key[KEYLEN];
	dev->random(dev->random_ctx, key, sizeof key);
	r = wrap(dev, hdr, P11_STORE_USER, kdf, user_pin, user_len, key);
	if (!r)
		r = wrap(dev, hdr, P11_STORE_SO, kdf, so_pin, so_len, key);
	if (!r)
		r = data_write(dev, hdr, key, "", 0);
	if (!r)
		r = seal_and_write(&st, hdr, key);
	sodium_memzero(key, sizeof key);
	if (!r)
		r = header_clear(dev, st.hslot ^ 1);
	p11_store_close(&st);
	return r;
}

int p11_store_open(struct p11_store *st, const struct p11_store_dev *dev)
{
	if (!st)
		return P11_STORE_EINVAL;
	memset(st, 0, sizeof *st);
	st->unlocked = -1;
	int r = dev_ok(dev);
	if (r)
		return r;
	st->dev = *dev;
	return headers_read(dev, st->hdr, &st->hslot);
}

void p11_store_get_info(const struct p11_store *st, struct p11_store_info *info)
{
	memcpy(info->label, st->hdr + H_LABEL, P11_STORE_LABEL_LEN);
	for (unsigned r = 0; r < 2; r++) {
		const uint8_t *w = st->hdr + H_WRAP + r * WRAP_LEN;
		info->tries_left[r] = get32(st->hdr + H_TRIES + 4 * r);
		info->kdf[r].ops = get32(w + W_OPS);
		info->kdf[r].mem_kib = get32(w + W_MEM);
	}
	info->generation = get64(st->hdr + H_GEN);
	memcpy(info->id, st->hdr + H_ID, P11_STORE_ID_LEN);
}

/* 0 for an open store that can take a call, else the code to return. */
static int usable(const struct p11_store *st)
{
	if (!st || memcmp(st->hdr, MAGIC, sizeof MAGIC))
		return P11_STORE_EINVAL;
	return st->broken ? P11_STORE_EIO : P11_STORE_OK;
}

int p11_store_unlock(struct p11_store *st, enum p11_store_role role, const char *pin,
		     size_t len)
{
	int r = usable(st);
	if (r)
		return r;
	if (role != P11_STORE_USER && role != P11_STORE_SO)
		return P11_STORE_EINVAL;
	if (!pin_ok(pin, len))
		return P11_STORE_EPINLEN;
	p11_store_lock(st);
	uint8_t hdr[512];
	memcpy(hdr, st->hdr, sizeof hdr);
	uint32_t tries = get32(hdr + H_TRIES + 4 * role);
	if (tries == 0)
		return P11_STORE_ELOCKED;
	/* The try is spent, durably, before the derivation starts: a guess
	 * cut short by killing the guest still counts. */
	put32(hdr + H_TRIES + 4 * role, tries - 1);
	r = header_write(&st->dev, hdr, &st->hslot);
	if (r)
		return failed(st, r);
	memcpy(st->hdr, hdr, sizeof hdr);

	uint8_t key[KEYLEN], mac[32];
	r = unwrap(hdr, role, pin, len, key);
	if (r)
		return r;
	header_mac(hdr, key, mac);
	if (crypto_verify_32(mac, hdr + H_MAC)) {
		sodium_memzero(key, sizeof key);
		return P11_STORE_ETAMPERED;
	}
	put32(hdr + H_TRIES + 4 * role, P11_STORE_TRIES);
	r = seal_and_write(st, hdr, key);
	if (r == P11_STORE_OK) {
		memcpy(st->key, key, sizeof key);
		st->unlocked = (int)role;
	}
	sodium_memzero(key, sizeof key);
	return r;
}

int p11_store_read(struct p11_store *st, void *buf, size_t cap, size_t *len)
{
	int r = usable(st);
	if (r)
		return r;
	if (!buf || !len)
		return P11_STORE_EINVAL;
	if (st->unlocked < 0)
		return P11_STORE_ESTATE;
	const struct p11_store_dev *d = &st->dev;
	size_t n = get32(st->hdr + H_DLEN), ss = d->sector_size;
	if (n > cap)
		return P11_STORE_ETOOBIG;
	size_t sectors = (n + TAG + ss - 1) / ss;
	uint8_t *ct = malloc(sectors * ss);
	if (!ct)
		return P11_STORE_ENOMEM;
	uint8_t ad[DATA_AD_LEN], k[KEYLEN];
	if (d->read(d->ctx, data_sector(d, get32(st->hdr + H_DSLOT)), ct, (uint32_t)sectors)) {
		r = P11_STORE_EIO;
	} else {
		data_ad(st->hdr, ad);
		subkey(k, SUB_DATA, st->key);
		if (crypto_aead_xchacha20poly1305_ietf_decrypt(buf, NULL, NULL, ct, n + TAG, ad,
							       sizeof ad, st->hdr + H_DNONCE, k)) {
			sodium_memzero(buf, n);
			r = P11_STORE_ETAMPERED;
		}
		sodium_memzero(k, sizeof k);
	}
	free(ct);
	*len = r ? 0 : n;
	return r;
}

int p11_store_commit(struct p11_store *st, const void *blob, size_t len)
{
	int r = usable(st);
	if (r)
		return r;
	if (!blob && len)
		return P11_STORE_EINVAL;
	if (st->unlocked < 0)
		return P11_STORE_ESTATE;
	if (len > P11_STORE_BLOB_MAX)
		return P11_STORE_ETOOBIG;
	uint8_t hdr[512];
	memcpy(hdr, st->hdr, sizeof hdr);
	r = failed(st, data_write(&st->dev, hdr, st->key, len ? blob : "", len));
	if (!r)
		r = seal_and_write(st, hdr, st->key);
	return r;
}

/* Wraps the data key (the store is unlocked) for role under a new PIN, at
 * the same cost, and restores the role's tries. */
static int rewrap(struct p11_store *st, unsigned role, const char *pin, size_t len)
{
	uint8_t hdr[512];
	memcpy(hdr, st->hdr, sizeof hdr);
	const uint8_t *w = hdr + H_WRAP + role * WRAP_LEN;
	struct p11_store_kdf kdf = { get32(w + W_OPS), get32(w + W_MEM) };
	int r = wrap(&st->dev, hdr, role, &kdf, pin, len, st->key);
	put32(hdr + H_TRIES + 4 * role, P11_STORE_TRIES);
	if (!r)
		r = seal_and_write(st, hdr, st->key);
	return r;
}

int p11_store_change_pin(struct p11_store *st, enum p11_store_role role, const char *old_pin,
			 size_t old_len, const char *new_pin, size_t new_len)
{
	if (!pin_ok(new_pin, new_len))
		return P11_STORE_EPINLEN;
	int r = p11_store_unlock(st, role, old_pin, old_len);
	return r ? r : rewrap(st, role, new_pin, new_len);
}

int p11_store_init_pin(struct p11_store *st, const char *pin, size_t len)
{
	int r = usable(st);
	if (r)
		return r;
	if (st->unlocked != P11_STORE_SO)
		return P11_STORE_ESTATE;
	if (!pin_ok(pin, len))
		return P11_STORE_EPINLEN;
	return rewrap(st, P11_STORE_USER, pin, len);
}

void p11_store_lock(struct p11_store *st)
{
	if (!st)
		return;
	sodium_memzero(st->key, sizeof st->key);
	st->unlocked = -1;
}

void p11_store_close(struct p11_store *st)
{
	if (!st)
		return;
	sodium_memzero(st, sizeof *st);
	st->unlocked = -1;
}

const char *p11_store_strerror(int err)
{
	switch (err) {
	case P11_STORE_OK: return "success";
	case P11_STORE_EIO: return "the device failed a read, write or flush";
	case P11_STORE_EBLANK: return "no token store on this device (initialize it)";
	case P11_STORE_EVERSION: return "a token store of a format version this build does not read";
	case P11_STORE_EDEVICE: return "device too small or of another sector size than the store";
	case P11_STORE_ECORRUPT: return "token store damaged: no header passes its checks";
	case P11_STORE_ETAMPERED: return "token store altered or rolled back: authentication failed";
	case P11_STORE_EPIN: return "wrong PIN";
	case P11_STORE_ELOCKED: return "PIN locked: no tries left";
	case P11_STORE_EPINLEN: return "PIN empty or too long";
	case P11_STORE_ETOOBIG: return "object set too large for the store or the buffer";
	case P11_STORE_ESTATE: return "token store not unlocked for this operation";
	case P11_STORE_ENOMEM: return "out of memory";
	case P11_STORE_EINVAL: return "invalid argument";
	}
	return "unknown token store error";
}

#if !__STDC_HOSTED__
#include "cloak/block.h"

/*
 * Argon2id's working memory. libsodium maps it with mmap() and unmaps it
 * without wiping it (it passes Argon2 no clearing flag), and the last of
 * its blocks gives the key-encryption key. A guest has no mmap: these two,
 * the only callers of which in a guest are libsodium's Argon2, take it from
 * the heap and wipe all of it before it goes back.
 */
void *mmap(void *addr, size_t len, int prot, int flags, int fd, long off);
int munmap(void *addr, size_t len);

void *mmap(void *addr, size_t len, int prot, int flags, int fd, long off)
{
	void *p = aligned_alloc(64, len);
	return p ? p : (void *)-1; /* MAP_FAILED */
}

int munmap(void *addr, size_t len)
{
	sodium_memzero(addr, len);
	free(addr);
	return 0;
}

static int blk_read(void *ctx, uint64_t sector, void *buf, uint32_t count)
{
	const struct cloak_block *b = ctx;
	return cloak_block_read(b, sector * b->sector_size, buf, (size_t)count * b->sector_size);
}

static int blk_write(void *ctx, uint64_t sector, const void *buf, uint32_t count)
{
	const struct cloak_block *b = ctx;
	return cloak_block_write(b, sector * b->sector_size, buf, (size_t)count * b->sector_size);
}

static int blk_flush(void *ctx)
{
	return cloak_block_flush(ctx);
}

int p11_store_dev_cloak_block(struct p11_store_dev *dev, const struct cloak_block *b,
			      void (*random)(void *random_ctx, void *buf, size_t n),
			      void *random_ctx)
{
	if (b->sector_size != 512 && b->sector_size != 4096)
		return P11_STORE_EDEVICE;
	*dev = (struct p11_store_dev){
		.ctx = (void *)b,
		.sector_size = (uint32_t)b->sector_size,
		.sectors = b->capacity / b->sector_size,
		.read = blk_read,
		.write = blk_write,
		.flush = blk_flush,
		.random = random,
		.random_ctx = random_ctx,
	};
	return P11_STORE_OK;
}
#endif

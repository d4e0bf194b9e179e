/* SPDX-License-Identifier: ISC */
/*
 * libFuzzer target: the PKCS#11 token's store (services/pkcs11/guest/store.c)
 * opened and unlocked on an image the host made up.
 *
 * Input: one byte of flags, then the two header sectors (512 bytes each),
 * then the rest split evenly between the starts of the two data slots;
 * everything else on the device is zero. Flags: bit 0 recomputes both
 * headers' checksums (as a host could, so the fuzzer gets past them to the
 * MAC and the AEAD), bit 1 unlocks as the SO instead of the user, bit 2
 * commits a blob after a successful unlock, bit 3 changes the PIN (and,
 * as the SO, sets the user PIN).
 *
 * Invariants beyond "no crash": every call returns a P11_STORE_* code; a
 * blob committed is the blob read back after reopening. The seeds
 * (test_p11_store --fuzz-seeds) are real stores with the PINs below and
 * Argon2id's least cost; headers asking for more than 2 passes or 64 KiB
 * are opened but not unlocked, to keep runs fast (the costs' bounds are
 * the unit tests').
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sodium/crypto_generichash_blake2b.h>

#include "store.h"

#define SS 512u
#define SECTORS (P11_STORE_MIN_BYTES(SS) / SS)
#define DSLOT ((P11_STORE_BLOB_MAX + 16u + SS - 1u) / SS)
#define H_SUM 344

static uint8_t img[SECTORS * SS];
static uint64_t rng_state;

static int f_read(void *ctx, uint64_t sector, void *buf, uint32_t count)
{
	if (sector > SECTORS || count > SECTORS - sector)
		abort(); /* the store asked past its own device */
	memcpy(buf, img + sector * SS, (size_t)count * SS);
	return 0;
}

static int f_write(void *ctx, uint64_t sector, const void *buf, uint32_t count)
{
	if (sector > SECTORS || count > SECTORS - sector)
		abort();
	memcpy(img + sector * SS, buf, (size_t)count * SS);
	return 0;
}

static int f_flush(void *ctx)
{
	return 0;
}

/* Deterministic, so a crash input replays. */
static void f_random(void *ctx, void *buf, size_t n)
{
	uint8_t *p = buf;
	for (size_t i = 0; i < n; i++) {
		rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
		p[i] = (uint8_t)(rng_state >> 56);
	}
}

static const struct p11_store_dev dev = { NULL, SS, SECTORS, f_read, f_write, f_flush, f_random, NULL };

static void check_code(int r)
{
	if (r > 0 || r < P11_STORE_EINVAL)
		abort();
}

static const char *const pins[2] = { "1234", "so-secret" };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t flags = data[0];
	data++;
	size--;
	memset(img, 0, sizeof img);
	rng_state = 1;
	size_t h = size < 2 * SS ? size : 2 * SS;
	memcpy(img, data, h);
	size_t rest = (size - h) / 2;
	if (rest > DSLOT * SS)
		rest = DSLOT * SS;
	memcpy(img + 2 * SS, data + h, rest);
	memcpy(img + (2 + DSLOT) * SS, data + h + rest, rest);
	if (flags & 1)
		for (unsigned i = 0; i < 2; i++)
			crypto_generichash_blake2b(img + i * SS + H_SUM, 32, img + i * SS, H_SUM, NULL, 0);

	struct p11_store st;
	int r = p11_store_open(&st, &dev);
	check_code(r);
	if (r)
		return 0;
	struct p11_store_info info;
	p11_store_get_info(&st, &info);
	unsigned role = (flags >> 1) & 1;
	if (info.kdf[role].ops > 2 || info.kdf[role].mem_kib > 64) {
		p11_store_close(&st);
		return 0;
	}
	r = p11_store_unlock(&st, role, pins[role], strlen(pins[role]));
	check_code(r);
	static uint8_t buf[P11_STORE_BLOB_MAX];
	size_t n = 0;
	if (!r) {
		check_code(p11_store_read(&st, buf, sizeof buf, &n));
		if ((flags & 8) && role == P11_STORE_SO)
			check_code(p11_store_init_pin(&st, pins[0], strlen(pins[0])));
		if (flags & 8)
			check_code(p11_store_change_pin(&st, role, pins[role], strlen(pins[role]),
							pins[role], strlen(pins[role])));
	}
	if (!r && (flags & 4)) {
		static const uint8_t blob[] = "a new object set";
		if (p11_store_commit(&st, blob, sizeof blob) == P11_STORE_OK) {
			p11_store_close(&st);
			if (p11_store_open(&st, &dev) ||
			    p11_store_unlock(&st, role, pins[role], strlen(pins[role])) ||
			    p11_store_read(&st, buf, sizeof buf, &n) || n != sizeof blob ||
			    memcmp(buf, blob, n))
				abort(); /* a commit that did not stick */
		}
	}
	p11_store_close(&st);
	return 0;
}

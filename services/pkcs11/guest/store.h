/* SPDX-License-Identifier: ISC */
/*
 * The PKCS#11 token's persistent store (docs/pkcs11-store.md).
 *
 * The token hands the store its object set as one opaque blob of at most
 * P11_STORE_BLOB_MAX bytes; the store keeps it encrypted and authenticated
 * on a block device, under a random data key that is wrapped twice: under
 * a key derived (Argon2id) from the user PIN and under one derived from the
 * SO PIN. The device is reached through struct p11_store_dev, so the host's
 * tests use a file or memory and the guest uses cloak_block_* (see
 * p11_store_dev_cloak_block() below, guest builds only).
 *
 * Every update is crash safe: interrupted at any write, the device holds
 * the previous or the new store. Every function returns P11_STORE_OK or a
 * negative P11_STORE_E* code; none ever crashes on a hostile image.
 */
#ifndef P11_STORE_H
#define P11_STORE_H

#include <stddef.h>
#include <stdint.h>

#define P11_STORE_BLOB_MAX (256u * 1024u)
#define P11_STORE_LABEL_LEN 32u /* CK_TOKEN_INFO.label: 32 bytes, space padded */
#define P11_STORE_PIN_MAX 128u  /* bytes; 1 .. this */
#define P11_STORE_TRIES 10u     /* wrong PINs in a row before a role locks */
/* Smallest device (bytes) for each sector size: two header sectors and two
 * data slots of P11_STORE_BLOB_MAX + 16 bytes, rounded up to sectors. */
#define P11_STORE_MIN_BYTES(sector) \
	((2u + 2u * ((P11_STORE_BLOB_MAX + 16u + (sector) - 1u) / (sector))) * (uint64_t)(sector))

enum p11_store_err {
	P11_STORE_OK = 0,
	P11_STORE_EIO = -1,       /* the device failed a read, write or flush (after a
				   * failed write every call says so: close and reopen) */
	P11_STORE_EBLANK = -2,    /* no store on this device (format it) */
	P11_STORE_EVERSION = -3,  /* a store of a format version this code does not read */
	P11_STORE_EDEVICE = -4,   /* device too small, or sector size not 512/4096 or not the store's */
	P11_STORE_ECORRUPT = -5,  /* no header passes its checks: torn, truncated or altered */
	P11_STORE_ETAMPERED = -6, /* authentication failed under the right key: altered or rolled */
	P11_STORE_EPIN = -7,      /* wrong PIN (CKR_PIN_INCORRECT); one try used */
	P11_STORE_ELOCKED = -8,   /* no tries left for this role (CKR_PIN_LOCKED) */
	P11_STORE_EPINLEN = -9,   /* PIN empty or longer than P11_STORE_PIN_MAX (CKR_PIN_LEN_RANGE) */
	P11_STORE_ETOOBIG = -10,  /* blob over P11_STORE_BLOB_MAX, or the read buffer too small */
	P11_STORE_ESTATE = -11,   /* not unlocked, or not unlocked as the role this needs */
	P11_STORE_ENOMEM = -12,   /* no memory for the derivation or the I/O buffer */
	P11_STORE_EINVAL = -13,   /* a bad argument (role, KDF cost, NULL) */
};

enum p11_store_role { P11_STORE_USER = 0, P11_STORE_SO = 1 };

/*
 * The block device. Sector numbers and counts; each callback returns 0 or
 * a negative value (any: reported as P11_STORE_EIO). flush returns once
 * every write before it is durable. random fills buf with n bytes from a
 * cryptographic source (keys, salts, nonces); it cannot fail.
 */
struct p11_store_dev {
	void *ctx;
	uint32_t sector_size; /* 512 or 4096 */
	uint64_t sectors;     /* capacity */
	int (*read)(void *ctx, uint64_t sector, void *buf, uint32_t count);
	int (*write)(void *ctx, uint64_t sector, const void *buf, uint32_t count);
	int (*flush)(void *ctx);
	void (*random)(void *random_ctx, void *buf, size_t n);
	void *random_ctx;
};

/* Argon2id's cost for one PIN: passes over mem_kib KiB. Stored in the
 * header; unlock accepts P11_STORE_KDF_* bounds only. */
struct p11_store_kdf {
	uint32_t ops;
	uint32_t mem_kib;
};
#define P11_STORE_KDF_OPS 3u          /* the default (docs/pkcs11-store.md: why) */
#define P11_STORE_KDF_MEM_KIB 16384u  /* 16 MiB */
#define P11_STORE_KDF_OPS_MAX 16u
#define P11_STORE_KDF_MEM_KIB_MIN 8u  /* Argon2id's least; for tests */
#define P11_STORE_KDF_MEM_KIB_MAX 65536u

/* An open store. Holds the data key while unlocked: keep it in private
 * memory, and end with p11_store_close(), which wipes it. */
struct p11_store {
	struct p11_store_dev dev;
	int unlocked;                 /* -1, or the role that unlocked */
	int broken;                   /* a write failed: the state on disk is unknown, reopen */
	uint8_t hdr[512];             /* the newest valid header, as on disk */
	uint8_t hslot;                /* which header sector holds it */
	uint8_t key[32];              /* the data key, while unlocked */
};

/* The store id's length (header bytes 32-47). */
#define P11_STORE_ID_LEN 16

struct p11_store_info {
	char label[P11_STORE_LABEL_LEN];
	uint32_t tries_left[2];       /* per role; 0: locked */
	struct p11_store_kdf kdf[2];  /* per role */
	uint64_t generation;          /* commits since format (1 after it) */
	uint8_t id[P11_STORE_ID_LEN]; /* the store id: random at format, then fixed */
};

/* Writes a new store (an empty blob) over whatever the device holds; safe
 * against a crash as a commit is. kdf NULL: the defaults. label: up to 32
 * bytes, padded with spaces. */
int p11_store_format(const struct p11_store_dev *dev, const char *label, const char *so_pin,
		     size_t so_len, const char *user_pin, size_t user_len,
		     const struct p11_store_kdf *kdf);
/* Finds the newest valid header; no PIN needed. */
int p11_store_open(struct p11_store *st, const struct p11_store_dev *dev);
void p11_store_get_info(const struct p11_store *st, struct p11_store_info *info);
/* Spends one try (written and flushed first), derives, unwraps; on success
 * restores the role's tries. P11_STORE_EPIN, P11_STORE_ELOCKED. */
int p11_store_unlock(struct p11_store *st, enum p11_store_role role, const char *pin,
		     size_t len);
/* Decrypts the blob into buf (cap bytes); *len gets its size. Unlocked. */
int p11_store_read(struct p11_store *st, void *buf, size_t cap, size_t *len);
/* Replaces the blob (len <= P11_STORE_BLOB_MAX). Unlocked. */
int p11_store_commit(struct p11_store *st, const void *blob, size_t len);
/* C_SetPIN: checks old_pin for role as unlock does (a try spent, restored
 * on success), then wraps the same data key under new_pin. The store is
 * left unlocked as role. */
int p11_store_change_pin(struct p11_store *st, enum p11_store_role role, const char *old_pin,
			 size_t old_len, const char *new_pin, size_t new_len);
/* C_InitPIN: the SO (unlocked as P11_STORE_SO) sets a new user PIN, which
 * also restores the user's tries (unlocks a locked user). */
int p11_store_init_pin(struct p11_store *st, const char *pin, size_t len);
/* Forgets the data key (logout); the store stays open. */
void p11_store_lock(struct p11_store *st);
void p11_store_close(struct p11_store *st);
/* A name for an error code, for messages. */
const char *p11_store_strerror(int err);

#if !__STDC_HOSTED__
/* In the guest, store.c also defines mmap() and munmap() for libsodium's
 * Argon2 (heap memory, wiped on unmap). Besides Debian's libsodium.a and
 * services/common's shims (sodium_memzero in sodium_shim.c, compat.c), a
 * guest linking the store supplies sodium_misuse, sodium_memcmp,
 * __errno_location and __assert_fail (docs/pkcs11-store.md).
 *
 * A device on a cloak block device (cloak/block.h), opened
 * by the caller; random is the caller's. Returns P11_STORE_EDEVICE for a
 * sector size the store does not take. */
struct cloak_block;
int p11_store_dev_cloak_block(struct p11_store_dev *dev, const struct cloak_block *b,
			      void (*random)(void *random_ctx, void *buf, size_t n),
			      void *random_ctx);
#endif

#endif

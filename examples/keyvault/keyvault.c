/* SPDX-License-Identifier: ISC */
/*
 * keyvault: a guest that holds an ECDSA P-256 signing key in its protected
 * memory and signs SHA-256 digests for clients on a channel.
 *
 *   cloak --channel kv=listen:PATH [--block state=IMG] keyvault.elf [--test-hooks]
 *
 * The key is generated at start from CPU and host entropy (entropy.c) and
 * lives only in private guest memory: the runtime copies requests and
 * replies through the shared bounce pool, and only public values (public
 * key, signatures, the optional state record) ever go there. The protocol
 * is in protocol.h. Crypto is BearSSL, with implementations picked by hand
 * (P-256 "m31", i31 ECDSA, SHA-256, HMAC-DRBG) because the library's
 * defaults use SSE arithmetic that this project's hosts cannot emulate.
 */
#include <stdio.h>
#include <string.h>

#include <bearssl/bearssl_ec.h>
#include <bearssl/bearssl_hash.h>
#include <bearssl/bearssl_rand.h>

#include "cloak/block.h"
#include "cloak/channel.h"
#include "cloak/guest.h"
#include "entropy.h"
#include "protocol.h"

#define EC (&br_ec_p256_m31)

static br_ec_private_key sk;
static unsigned char sk_buf[BR_EC_KBUF_PRIV_MAX_SIZE];
static br_ec_public_key pk;
static unsigned char pk_buf[BR_EC_KBUF_PUB_MAX_SIZE];
static unsigned long long signatures;
static int test_hooks;
static char entropy_report[96];

void compat_init(void); /* compat.c */

/* The optional "state" disk holds only public data: a magic, the public
 * key and the signature count, so a restarted host can tell which key the
 * vault had. */
struct state_record {
	char magic[8];
	unsigned char pubkey[KV_PUBKEY_LEN];
	unsigned char pad[7];
	unsigned long long signatures;
};

static void save_state(void)
{
	struct cloak_block b;
	if (cloak_block_open("state", &b) || b.capacity < b.sector_size ||
	    b.sector_size < sizeof(struct state_record))
		return;
	static unsigned char sector[4096];
	struct state_record *r = (struct state_record *)sector;
	memset(sector, 0, sizeof sector);
	memcpy(r->magic, "CLKVAULT", 8);
	memcpy(r->pubkey, pk.q, KV_PUBKEY_LEN);
	r->signatures = signatures;
	if (cloak_block_write(&b, 0, sector, b.sector_size) == 0)
		cloak_block_flush(&b);
}

static int keygen(void)
{
	br_hmac_drbg_context drbg;
	if (entropy_seed(&drbg, entropy_report, sizeof entropy_report) == 0)
		return -1;
	size_t n = br_ec_keygen(&drbg.vtable, EC, &sk, sk_buf, BR_EC_secp256r1);
	/* The DRBG state could regenerate the key: wipe it now. */
	void *w = &drbg;
	size_t z = sizeof drbg;
	__asm__ volatile("rep stosb" : "+D"(w), "+c"(z) : "a"(0) : "memory");
	if (n != 32 || br_ec_compute_pub(EC, &pk, pk_buf, &sk) != KV_PUBKEY_LEN)
		return -1;
	return 0;
}

static int reply(int h, unsigned char status, const void *payload, size_t len)
{
	unsigned char msg[2 + 255];
	msg[0] = status;
	msg[1] = (unsigned char)len;
	memcpy(msg + 2, payload, len);
	return cloak_chan_write(h, msg, 2 + len, CLOAK_CHAN_FOREVER);
}

/* Serves one request; returns 1 after QUIT, 0 to go on, <0 on error. */
static int serve_one(int h)
{
	unsigned char op;
	int r = cloak_chan_read_full(h, &op, 1, CLOAK_CHAN_FOREVER);
	if (r)
		return r;
	switch (op) {
	case KV_OP_PUBKEY:
		return reply(h, KV_OK, pk.q, pk.qlen);
	case KV_OP_SIGN: {
		unsigned char digest[KV_DIGEST_LEN], sig[KV_SIG_MAX];
		r = cloak_chan_read_full(h, digest, sizeof digest, CLOAK_CHAN_FOREVER);
		if (r)
			return r;
		size_t n = br_ecdsa_i31_sign_asn1(EC, &br_sha256_vtable, digest, &sk, sig);
		if (!n)
			return reply(h, KV_ERR_CRYPTO, NULL, 0);
		signatures++;
		return reply(h, KV_OK, sig, n);
	}
	case KV_OP_INFO: {
		char text[160];
		int n = snprintf(text, sizeof text, "%s; %llu signatures; protection 0x%llx",
				 entropy_report, signatures,
				 (unsigned long long)cloak_protection());
		return reply(h, KV_OK, text, (size_t)n < sizeof text ? (size_t)n : sizeof text - 1);
	}
	case KV_OP_KEYHASH: {
		if (!test_hooks)
			return reply(h, KV_ERR_UNKNOWN, NULL, 0);
		br_sha256_context c;
		unsigned char out[32];
		br_sha256_init(&c);
		br_sha256_update(&c, sk.x, sk.xlen);
		br_sha256_out(&c, out);
		return reply(h, KV_OK, out, sizeof out);
	}
	case KV_OP_QUIT:
		reply(h, KV_OK, NULL, 0);
		return 1;
	default:
		return reply(h, KV_ERR_UNKNOWN, NULL, 0);
	}
}

int main(int argc, char **argv)
{
	compat_init(); /* before the first BearSSL call */
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--test-hooks"))
			test_hooks = 1;
	if (!cloak_protection())
		printf("keyvault: warning: memory protection is off\n");
	uint64_t t0 = cloak_time_ns();
	if (keygen()) {
		printf("keyvault: key generation failed (%s)\n", entropy_report);
		return 1;
	}
	save_state();
	printf("keyvault: P-256 key ready in %llu ms; %s\n",
	       (unsigned long long)((cloak_time_ns() - t0) / 1000000), entropy_report);
	int h = cloak_chan_open("kv");
	if (h < 0) {
		printf("keyvault: no channel 'kv' (%d): run with --channel kv=listen:PATH\n", h);
		return 1;
	}
	for (;;) {
		int r = serve_one(h);
		if (r == 1)
			break;
		if (r == -CLOAK_EPIPE) { /* client left: wait for the next one */
			h = cloak_chan_open("kv");
			if (h < 0)
				return 1;
			continue;
		}
		if (r < 0) {
			printf("keyvault: channel error %d\n", r);
			return 1;
		}
	}
	save_state();
	printf("keyvault: %llu signatures, bye\n", signatures);
	return 0;
}

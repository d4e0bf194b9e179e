/* SPDX-License-Identifier: ISC */
/* Signatures on OpenSSL's libcrypto: see p11_ossl.h. */

/* EC_KEY, ECDSA_do_sign, RSA_private_encrypt and RAND_METHOD are
 * deprecated in OpenSSL 3.0 in favour of EVP and providers, whose
 * machinery (name lookups, property queries, provider loading) a guest
 * has no use for: the low-level calls, warnings off for this file only. */
#define OPENSSL_SUPPRESS_DEPRECATED 1

#include "p11_ossl.h"

#include <string.h>

#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/obj_mac.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>

#include <bearssl/bearssl_hash.h>
#include <bearssl/bearssl_rand.h>

#include "p11_ec.h"
#include "p11_rsa.h"
#include "wipe.h"

#if __STDC_HOSTED__
#include <malloc.h>
#include <sys/random.h>
#else
#include "cloak/heap.h"
#include "entropy.h"
#endif

bool p11_ossl_cpu_ok(uint32_t leaf1_ecx)
{
	return (leaf1_ecx >> 9) & 1; /* SSSE3 */
}

/* ---- OpenSSL's random bytes: BearSSL's HMAC-DRBG */

static br_hmac_drbg_context drbg;

static int rand_bytes(unsigned char *buf, int num)
{
	if (num < 0)
		return 0;
	br_hmac_drbg_generate(&drbg, buf, (size_t)num);
	return 1;
}

/* RAND_seed's bytes go into the DRBG as additional input. */
static int rand_seed(const void *buf, int num)
{
	if (num > 0)
		br_hmac_drbg_update(&drbg, buf, (size_t)num);
	return 1;
}

static int rand_status(void)
{
	return 1;
}

/* .add is left out: it takes a double, and RAND_add without it does
 * nothing (nothing the token calls adds entropy that way). */
static const RAND_METHOD rand_method = {
	.seed = rand_seed,
	.bytes = rand_bytes,
	.pseudorand = rand_bytes,
	.status = rand_status,
};

/* The DRBG's seed: the token's entropy (RDSEED, RDRAND and the host's
 * getrandom mixed, entropy.c) in the guest; getrandom on the host. */
static bool seed_drbg(void)
{
#if __STDC_HOSTED__
	uint8_t s[48];
	bool ok = getrandom(s, sizeof s, 0) == (ssize_t)sizeof s;
	if (ok)
		br_hmac_drbg_init(&drbg, &br_sha256_vtable, s, sizeof s);
	wipe(s, sizeof s);
	return ok;
#else
	char report[96];
	return entropy_seed(&drbg, report, sizeof report) > 0;
#endif
}

#if !__STDC_HOSTED__
/* OpenSSL's heap in the guest: the runtime's, every block wiped before it
 * is freed or moved, as p11_rsa.c does for GMP: no part of a key, of a
 * blinding value or of an intermediate result stays behind in freed
 * memory. (The host keeps OpenSSL's own allocator: its test processes
 * use OpenSSL before the token does.) */
static void *wiping_malloc(size_t n, const char *file, int line)
{
	return malloc(n);
}

static void wiping_free(void *p, const char *file, int line)
{
	if (p)
		wipe(p, cloak_heap_usable_size(p));
	free(p);
}

static void *wiping_realloc(void *p, size_t n, const char *file, int line)
{
	if (!p)
		return malloc(n);
	if (!n) {
		wiping_free(p, file, line);
		return NULL;
	}
	void *q = malloc(n);
	if (!q)
		return NULL;
	size_t old = cloak_heap_usable_size(p);
	memcpy(q, p, old < n ? old : n);
	wiping_free(p, file, line);
	return q;
}

static uint32_t cpuid1_ecx(void)
{
	uint32_t a = 1, b, c = 0, d;
	__asm__ volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
	return c;
}
#endif

/* OpenSSL, once: no configuration file, no exit handler (a guest has
 * neither), then the random method. */
static bool init(void)
{
#if !__STDC_HOSTED__
	if (!CRYPTO_set_mem_functions(wiping_malloc, wiping_realloc, wiping_free))
		return false;
#endif
	return OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG | OPENSSL_INIT_NO_ATEXIT, NULL) == 1 &&
	       seed_drbg() && RAND_set_rand_method(&rand_method) == 1;
}

static bool asked, usable, force_portable;

bool p11_ossl_ready(void)
{
	if (!asked) {
		asked = true;
#if __STDC_HOSTED__
		/* libcrypto.so picks its code by the host's CPUID itself. */
		usable = init();
#else
		/* CPUID before any OpenSSL code runs: its assembly
		 * uses SSE whatever CPUID says. */
		usable = p11_ossl_cpu_ok(cpuid1_ecx()) && init();
#endif
	}
	return usable && !force_portable;
}

const char *p11_ossl_sign_impl(void)
{
	return p11_ossl_ready() ? "openssl" : "nettle";
}

void p11_ossl_force_portable(bool on)
{
	force_portable = on;
}

/* ---- Kept objects */

/* A tag for a key's parts: SHA-256 over each part with its length, so
 * that keys whose parts differ in any way never share a tag. Objects
 * OpenSSL builds for a key are kept under it (below); no copy of the
 * key is kept beside them for the comparison. */
static void tag_of(const uint8_t *const *v, const size_t *len, int n, uint8_t tag[32])
{
	br_sha256_context h;
	br_sha256_init(&h);
	for (int i = 0; i < n; i++) {
		uint8_t l[8];
		for (int j = 0; j < 8; j++)
			l[j] = (uint8_t)((uint64_t)len[i] >> (8 * j));
		br_sha256_update(&h, l, sizeof l);
		br_sha256_update(&h, v[i], len[i]);
	}
	br_sha256_out(&h, tag);
	wipe(&h, sizeof h);
}

/* ---- ECDSA */

/* Each curve's group, built once: building one (the curve's numbers,
 * its Montgomery context, the generator) was 29% of a P-256 signature
 * (callgrind, a host-process token). A group holds no secret; each key
 * gets its own copy (EC_KEY_set_group duplicates it). */
static EC_GROUP *groups[2];
static unsigned groups_built;

static const EC_GROUP *group_of(const struct p11_curve *c)
{
	int i = c->bits == 256 ? 0 : c->bits == 384 ? 1 : -1;
	if (i < 0)
		return NULL;
	if (!groups[i]) {
		groups[i] = EC_GROUP_new_by_curve_name(i == 0 ? NID_X9_62_prime256v1 : NID_secp384r1);
		groups_built += groups[i] != NULL;
	}
	return groups[i];
}

unsigned p11_ossl_groups_built(void)
{
	return groups_built;
}

/* The last EC key's object, kept as the RSA one is (below): building
 * and freeing one was about a tenth of a P-256 signature's time in the
 * reference VM (57 and 29 us of about 750, the guest's TSC). Tagged by
 * the curve and the scalar. */
static struct {
	EC_KEY *key;
	uint8_t tag[32];
} kept_ec;

static void forget_ec(void)
{
	EC_KEY_free(kept_ec.key); /* clears its copy of d */
	kept_ec.key = NULL;
	wipe(kept_ec.tag, sizeof kept_ec.tag);
}

bool p11_ossl_ec_kept(void)
{
	return kept_ec.key != NULL;
}

/* The key's object, kept or built anew, or NULL (also for a curve
 * OpenSSL is not asked to sign on). */
static EC_KEY *ec_key_of(const struct p11_curve *c, const uint8_t *d)
{
	const EC_GROUP *g = group_of(c);
	if (!g)
		return NULL;
	const uint8_t *v[2] = { c->oid, d };
	size_t len[2] = { c->oid_len, c->scalar };
	uint8_t tag[32];
	tag_of(v, len, 2, tag);
	if (!kept_ec.key || memcmp(tag, kept_ec.tag, sizeof tag) != 0) {
		forget_ec();
		EC_KEY *key = EC_KEY_new();
		BIGNUM *bd = key ? BN_bin2bn(d, (int)c->scalar, NULL) : NULL;
		bool ok = bd && EC_KEY_set_group(key, g) == 1 && EC_KEY_set_private_key(key, bd) == 1;
		BN_clear_free(bd);
		if (ok) {
			kept_ec.key = key;
			memcpy(kept_ec.tag, tag, sizeof tag);
		} else {
			EC_KEY_free(key);
		}
	}
	wipe(tag, sizeof tag);
	return kept_ec.key;
}

bool p11_ossl_ecdsa_sign(const struct p11_curve *c, const uint8_t *d, const uint8_t *hv, uint8_t *sig)
{
	/* P-256's group is ecp_nistz256 (OpenSSL's constant-time assembly),
	 * P-384's the generic Montgomery code with its constant-time ladder.
	 * No public key: signing does not need it. */
	EC_KEY *key = p11_ossl_ready() ? ec_key_of(c, d) : NULL;
	if (!key)
		return false;
	/* The nonce is OpenSSL's (BN_generate_dsa_nonce: SHA-512 over the
	 * key, the hash and random bytes from the DRBG). */
	ECDSA_SIG *s = ECDSA_do_sign(hv, (int)c->scalar, key);
	bool ok = s != NULL;
	if (ok) {
		const BIGNUM *r, *sv;
		ECDSA_SIG_get0(s, &r, &sv);
		ok = BN_bn2binpad(r, sig, (int)c->scalar) == (int)c->scalar &&
		     BN_bn2binpad(sv, sig + c->scalar, (int)c->scalar) == (int)c->scalar;
	}
	ECDSA_SIG_free(s);
	if (!ok) {
		forget_ec(); /* a key OpenSSL failed on is not kept */
		ERR_clear_error();
	}
	return ok;
}

/* ---- RSA */

/* The last key's RSA object, kept: building one costs its blinding (a
 * modular inversion) and three Montgomery contexts, about a third of a
 * 2048-bit signature; kept, OpenSSL renews the blinding itself (it
 * squares it between uses and draws a new one every 32). Its tag is
 * SHA-256 over every part with its length, so a key whose parts differ
 * in any way never meets another key's object. Freeing any token
 * object drops it (p11_ossl_forget, from p11_objects_free): no part of a
 * destroyed key outlives it here. */
static struct {
	RSA *rsa;
	uint8_t tag[32];
} kept_rsa;

static void forget_rsa(void)
{
	RSA_free(kept_rsa.rsa); /* clears d, the primes, the CRT values and their Montgomery contexts */
	kept_rsa.rsa = NULL;
	wipe(kept_rsa.tag, sizeof kept_rsa.tag);
}

void p11_ossl_forget(void)
{
	forget_rsa(); /* the last RSA key's */
	forget_ec();  /* the last EC key's */
}

bool p11_ossl_rsa_kept(void)
{
	return kept_rsa.rsa != NULL;
}

/* A new RSA object with the key's eight parts, or NULL. */
static RSA *rsa_of(const struct p11_rsa_key *k)
{
	BIGNUM *b[P11_RSA_PARTS] = { 0 };
	bool ok = true;
	for (int i = 0; ok && i < P11_RSA_PARTS; i++)
		ok = (b[i] = BN_bin2bn(k->v[i], (int)k->len[i], NULL)) != NULL;
	RSA *rsa = ok ? RSA_new() : NULL;
	/* RSA_set0_* take the numbers (and mark the private ones
	 * constant-time); what they did not take is freed below. */
	ok = rsa && RSA_set0_key(rsa, b[P11_RSA_N], b[P11_RSA_PUBEXP], b[P11_RSA_D]) == 1;
	if (ok)
		b[P11_RSA_N] = b[P11_RSA_PUBEXP] = b[P11_RSA_D] = NULL;
	ok = ok && RSA_set0_factors(rsa, b[P11_RSA_P], b[P11_RSA_Q]) == 1;
	if (ok)
		b[P11_RSA_P] = b[P11_RSA_Q] = NULL;
	ok = ok && RSA_set0_crt_params(rsa, b[P11_RSA_DP], b[P11_RSA_DQ], b[P11_RSA_QINV]) == 1;
	if (ok)
		b[P11_RSA_DP] = b[P11_RSA_DQ] = b[P11_RSA_QINV] = NULL;
	for (int i = 0; i < P11_RSA_PARTS; i++)
		BN_clear_free(b[i]);
	if (!ok) {
		RSA_free(rsa);
		return NULL;
	}
	return rsa;
}

bool p11_ossl_rsa_private(const struct p11_rsa_key *k, const uint8_t *em, size_t len, uint8_t *out)
{
	if (!p11_ossl_ready() || !len || len > P11_RSA_BYTES_MAX)
		return false;
	for (int i = 0; i < P11_RSA_PARTS; i++)
		if (!k->v[i] || !k->len[i] || k->len[i] > P11_RSA_BYTES_MAX)
			return false;
	uint8_t tag[32];
	tag_of(k->v, k->len, P11_RSA_PARTS, tag);
	if (!kept_rsa.rsa || memcmp(tag, kept_rsa.tag, sizeof tag) != 0) {
		forget_rsa();
		kept_rsa.rsa = rsa_of(k);
		if (!kept_rsa.rsa) {
			ERR_clear_error();
			return false;
		}
		memcpy(kept_rsa.tag, tag, sizeof tag);
	}
	wipe(tag, sizeof tag);
	/* CRT with Montgomery multiplication (BN_mod_exp_mont_consttime),
	 * blinded with the DRBG's bytes. OpenSSL checks the CRT result with
	 * the public key itself and, if it is wrong, computes m^d mod n
	 * instead: a fault in p, q or the CRT values gives a correct
	 * signature here, one in d as well a wrong one, which the caller's
	 * check refuses. */
	bool ok = (size_t)RSA_size(kept_rsa.rsa) == len &&
		  RSA_private_encrypt((int)len, em, out, kept_rsa.rsa, RSA_NO_PADDING) == (int)len;
	if (!ok) {
		forget_rsa(); /* a key OpenSSL failed on is not kept */
		ERR_clear_error();
	}
	return ok;
}

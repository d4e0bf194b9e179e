/* SPDX-License-Identifier: ISC */
/* RSA keys on Mbed TLS, signatures on Nettle: see p11_rsa.h. */
#include "p11_rsa.h"

#include <stdio.h>
#include <string.h>

#include <nettle/bignum.h>
#include <nettle/pkcs1.h>
#include <nettle/pss.h>
#include <nettle/rsa.h>
#include <nettle/sha1.h>
#include <nettle/sha2.h>

#include "p11_ossl.h"
#include "wipe.h"

#ifdef CLOAK_RT_STDIO_H
/* The guest's <stdio.h> has no streams; Mbed TLS's headers only name
 * FILE (for functions the token never calls). */
typedef struct p11_no_file FILE;
#endif
#include <mbedtls/bignum.h>
#include <mbedtls/md.h>
#include <mbedtls/rsa.h>

const uint64_t p11_rsa_attr[P11_RSA_PARTS] = {
	CKA_MODULUS, CKA_PUBLIC_EXPONENT, CKA_PRIVATE_EXPONENT, CKA_PRIME_1,
	CKA_PRIME_2, CKA_EXPONENT_1,	  CKA_EXPONENT_2,	CKA_COEFFICIENT,
};

bool p11_rsa_secret_attr(uint64_t type)
{
	for (int i = P11_RSA_D; i < P11_RSA_PARTS; i++)
		if (p11_rsa_attr[i] == type)
			return true;
	return false;
}

void p11_rsa_view(const struct p11_object *o, struct p11_rsa_key *k)
{
	for (int i = 0; i < P11_RSA_PARTS; i++) {
		uint32_t len = 0;
		k->v[i] = p11_obj_attr(o, p11_rsa_attr[i], &len);
		k->len[i] = len;
	}
}

/* Mbed TLS's random source: the caller's DRBG. */
static int rng(void *drbg, unsigned char *out, size_t len)
{
	br_hmac_drbg_generate(drbg, out, len);
	return 0;
}

static mbedtls_md_type_t md_of(CK_MECHANISM_TYPE hash)
{
	switch (hash) {
	case CKM_SHA_1: return MBEDTLS_MD_SHA1;
	case CKM_SHA256: return MBEDTLS_MD_SHA256;
	case CKM_SHA384: return MBEDTLS_MD_SHA384;
	case CKM_SHA512: return MBEDTLS_MD_SHA512;
	default: return MBEDTLS_MD_NONE;
	}
}

size_t p11_rsa_hash_len(CK_MECHANISM_TYPE hash)
{
	switch (hash) {
	case CKM_SHA_1: return 20;
	case CKM_SHA256: return 32;
	case CKM_SHA384: return 48;
	case CKM_SHA512: return 64;
	default: return 0;
	}
}

CK_RSA_PKCS_MGF_TYPE p11_rsa_mgf1(CK_MECHANISM_TYPE hash)
{
	switch (hash) {
	case CKM_SHA_1: return CKG_MGF1_SHA1;
	case CKM_SHA256: return CKG_MGF1_SHA256;
	case CKM_SHA384: return CKG_MGF1_SHA384;
	case CKM_SHA512: return CKG_MGF1_SHA512;
	default: return 0;
	}
}

/* Writes X at *p with its minimal length (one byte for zero) as part i. */
static bool put_part(const mbedtls_mpi *x, uint8_t **p, const uint8_t *end, struct p11_rsa_key *k, int i)
{
	size_t n = mbedtls_mpi_size(x);
	if (!n)
		n = 1;
	if ((size_t)(end - *p) < n || mbedtls_mpi_write_binary(x, *p, n))
		return false;
	k->v[i] = *p, k->len[i] = n;
	*p += n;
	return true;
}

/* Writes the context's key to buf, viewed by k (private: all parts). */
static bool save(const mbedtls_rsa_context *ctx, bool priv, uint8_t *buf, struct p11_rsa_key *k)
{
	mbedtls_mpi x[P11_RSA_PARTS];
	for (int i = 0; i < P11_RSA_PARTS; i++)
		mbedtls_mpi_init(&x[i]);
	memset(k, 0, sizeof *k);
	bool ok = !mbedtls_rsa_export(ctx, &x[P11_RSA_N], priv ? &x[P11_RSA_P] : NULL, priv ? &x[P11_RSA_Q] : NULL,
				      priv ? &x[P11_RSA_D] : NULL, &x[P11_RSA_PUBEXP]) &&
		  (!priv || !mbedtls_rsa_export_crt(ctx, &x[P11_RSA_DP], &x[P11_RSA_DQ], &x[P11_RSA_QINV]));
	uint8_t *p = buf;
	for (int i = 0; ok && i < (priv ? P11_RSA_PARTS : P11_RSA_PUB_PARTS); i++)
		ok = put_part(&x[i], &p, buf + P11_RSA_BUF, k, i);
	for (int i = 0; i < P11_RSA_PARTS; i++)
		mbedtls_mpi_free(&x[i]);
	return ok;
}

/* A value's length without its leading zero bytes. */
static size_t trimmed(const uint8_t *v, size_t len, const uint8_t **start)
{
	while (len && !*v)
		v++, len--;
	*start = v;
	return len;
}

static bool same_value(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	alen = trimmed(a, alen, &a);
	blen = trimmed(b, blen, &b);
	return alen == blen && !memcmp(a, b, alen);
}

static bool bits_ok(const mbedtls_rsa_context *ctx)
{
	size_t bits = mbedtls_mpi_bitlen(&ctx->N);
	return bits >= P11_RSA_BITS_MIN && bits <= P11_RSA_BITS_MAX;
}

/* Builds ctx from a stored key (n, e, d, p, q: Mbed TLS recomputes the
 * CRT values, which p11_rsa_import made sure match the stored ones). */
static bool load(mbedtls_rsa_context *ctx, const struct p11_rsa_key *k, bool priv)
{
	mbedtls_rsa_init(ctx, MBEDTLS_RSA_PKCS_V15, 0);
	const uint8_t *v[P11_RSA_PARTS] = { 0 };
	size_t len[P11_RSA_PARTS] = { 0 };
	for (int i = 0; i < (priv ? P11_RSA_PARTS : P11_RSA_PUB_PARTS); i++) {
		if (k->v[i] && k->len[i] > P11_RSA_BYTES_MAX)
			return false;
		if (k->v[i] && k->len[i])
			v[i] = k->v[i], len[i] = k->len[i];
	}
	return !mbedtls_rsa_import_raw(ctx, v[P11_RSA_N], len[P11_RSA_N], v[P11_RSA_P], len[P11_RSA_P],
				       v[P11_RSA_Q], len[P11_RSA_Q], v[P11_RSA_D], len[P11_RSA_D],
				       v[P11_RSA_PUBEXP], len[P11_RSA_PUBEXP]) &&
	       !mbedtls_rsa_complete(ctx) && bits_ok(ctx) &&
	       !(priv ? mbedtls_rsa_check_privkey(ctx) : mbedtls_rsa_check_pubkey(ctx));
}

bool p11_rsa_keygen(br_hmac_drbg_context *drbg, unsigned bits, uint8_t *buf, struct p11_rsa_key *k)
{
	mbedtls_rsa_context ctx;
	mbedtls_rsa_init(&ctx, MBEDTLS_RSA_PKCS_V15, 0);
	bool ok = bits >= P11_RSA_BITS_MIN && bits <= P11_RSA_BITS_MAX && bits % 8 == 0 &&
		  !mbedtls_rsa_gen_key(&ctx, rng, drbg, bits, P11_RSA_E) && !mbedtls_rsa_check_privkey(&ctx) &&
		  save(&ctx, true, buf, k);
	mbedtls_rsa_free(&ctx);
	return ok;
}

unsigned p11_rsa_import(const struct p11_rsa_key *in, bool priv, uint8_t *buf, struct p11_rsa_key *out)
{
	mbedtls_rsa_context ctx;
	bool ok = load(&ctx, in, priv) && save(&ctx, priv, buf, out);
	/* CRT values given with the key must be the ones its primes give. */
	for (int i = P11_RSA_P; ok && priv && i < P11_RSA_PARTS; i++)
		if (in->v[i])
			ok = same_value(in->v[i], in->len[i], out->v[i], out->len[i]);
	unsigned bits = ok ? (unsigned)mbedtls_mpi_bitlen(&ctx.N) : 0;
	mbedtls_rsa_free(&ctx);
	return bits;
}

unsigned p11_rsa_bits(const struct p11_rsa_key *k)
{
	const uint8_t *n;
	size_t len = k->v[P11_RSA_N] ? trimmed(k->v[P11_RSA_N], k->len[P11_RSA_N], &n) : 0;
	if (!len)
		return 0;
	unsigned bits = (unsigned)len * 8;
	for (unsigned top = n[0]; !(top & 0x80); top <<= 1)
		bits--;
	return bits;
}

/* Signatures on Nettle's RSA (docs/pkcs11.md, "Crypto libraries"): its
 * encoders, and its root (rsa_compute_root: GMP's mpn_sec functions,
 * side-channel silent by Nettle's manual) or OpenSSL's (p11_ossl.h),
 * with the result checked against the public key before it leaves.
 * Nettle keeps its integers in GMP's mpz, on the heap: while a signature
 * runs, GMP's allocator wipes every block it frees (and
 * a block it moves), so no part of the key or of the computation stays
 * behind in freed memory. */
static void *(*gmp_alloc)(size_t);
static void *(*gmp_realloc)(void *, size_t, size_t);
static void (*gmp_free)(void *, size_t);

static void wiping_free(void *p, size_t n)
{
	wipe(p, n);
	gmp_free(p, n);
}

static void *wiping_realloc(void *p, size_t old, size_t n)
{
	void *q = gmp_alloc(n);
	memcpy(q, p, old < n ? old : n);
	wiping_free(p, old);
	return q;
}

struct nettle_rsa {
	struct rsa_public_key pub;
	struct rsa_private_key key; /* loaded only where Nettle takes the root */
	bool openssl;               /* OpenSSL takes the root (p11_ossl_ready) */
};

/* Nettle's key from the stored parts (all eight, which p11_rsa_import
 * and p11_rsa_keygen checked and completed), GMP's wiping allocator on:
 * the public part always (the encoders and the check use it), the
 * private parts only where Nettle takes the root, since OpenSSL takes
 * its own from k. nettle_done undoes both, whatever this returned. */
static bool nettle_load(struct nettle_rsa *r, const struct p11_rsa_key *k)
{
	mp_get_memory_functions(&gmp_alloc, &gmp_realloc, &gmp_free);
	mp_set_memory_functions(gmp_alloc, wiping_realloc, wiping_free);
	rsa_public_key_init(&r->pub);
	rsa_private_key_init(&r->key);
	r->openssl = p11_ossl_ready();
	mpz_ptr x[P11_RSA_PARTS] = { r->pub.n, r->pub.e, r->key.d, r->key.p, r->key.q, r->key.a, r->key.b, r->key.c };
	int parts = r->openssl ? P11_RSA_PUBEXP + 1 : P11_RSA_PARTS;
	for (int i = 0; i < P11_RSA_PARTS; i++) {
		if (!k->v[i] || !k->len[i] || k->len[i] > P11_RSA_BYTES_MAX)
			return false;
		if (i < parts)
			mpz_import(x[i], k->len[i], 1, 1, 1, 0, k->v[i]);
	}
	return rsa_public_key_prepare(&r->pub) && (r->openssl || rsa_private_key_prepare(&r->key)) &&
	       r->pub.size == (p11_rsa_bits(k) + 7) / 8 && p11_rsa_bits(k) >= P11_RSA_BITS_MIN &&
	       p11_rsa_bits(k) <= P11_RSA_BITS_MAX;
}

static void nettle_done(struct nettle_rsa *r)
{
	rsa_private_key_clear(&r->key);
	rsa_public_key_clear(&r->pub);
	mp_set_memory_functions(gmp_alloc, gmp_realloc, gmp_free);
}

/* s = m^d, then checked with the public key before it may leave: a
 * fault in the private computation must not hand out a value from which
 * the primes follow. The root is OpenSSL's where the guest may run it
 * (p11_ossl.h: CRT and Montgomery multiplication, constant-time, blinded),
 * else Nettle's side-channel silent rsa_compute_root (GMP's mpn_sec
 * functions, docs/pkcs11.md). Nettle's is not blinded: the _tr
 * functions' blinding costs a side-channel silent inversion, about half
 * of a 2048-bit signature, on top of a root that is silent already. The
 * check is the same for both. */
static bool checked_root(const struct nettle_rsa *r, const struct p11_rsa_key *k, mpz_t s, const mpz_t m)
{
	if (mpz_sgn(m) < 0 || mpz_cmp(m, r->pub.n) >= 0)
		return false;
	if (r->openssl) {
		uint8_t em[P11_RSA_BYTES_MAX], out[P11_RSA_BYTES_MAX];
		nettle_mpz_get_str_256(r->pub.size, em, m);
		bool done = p11_ossl_rsa_private(k, em, r->pub.size, out);
		if (done)
			nettle_mpz_set_str_256_u(s, r->pub.size, out);
		wipe(out, r->pub.size);
		if (!done)
			return false;
	} else {
		rsa_compute_root(&r->key, s, m);
	}
	mpz_t back;
	mpz_init(back);
	mpz_powm(back, s, r->pub.e, r->pub.n); /* public values only */
	bool ok = mpz_cmp(back, m) == 0;
	mpz_clear(back);
	return ok;
}

/* The signature s, as long as the modulus in bytes, at sig. */
static void nettle_put(const struct nettle_rsa *r, mpz_t s, uint8_t *sig)
{
	nettle_mpz_get_str_256(r->pub.size, sig, s);
}

bool p11_rsa_sign_pkcs1(const struct p11_rsa_key *k, br_hmac_drbg_context *drbg, CK_MECHANISM_TYPE hash,
			const uint8_t *in, size_t len, uint8_t *sig)
{
	mbedtls_md_type_t md = md_of(hash);
	if (hash && (md == MBEDTLS_MD_NONE || len != p11_rsa_hash_len(hash)))
		return false;
	if (hash == CKM_SHA384) {
		/* Nettle 3.8 has no PKCS#1 v1.5 signature with SHA-384: Mbed
		 * TLS's, blinded (docs/pkcs11.md). */
		mbedtls_rsa_context ctx;
		bool ok = load(&ctx, k, true) &&
			  !mbedtls_rsa_rsassa_pkcs1_v15_sign(&ctx, rng, drbg, MBEDTLS_RSA_PRIVATE, md,
							     (unsigned)len, in, sig);
		mbedtls_rsa_free(&ctx);
		return ok;
	}
	struct nettle_rsa r;
	mpz_t m, s;
	bool ok = nettle_load(&r, k);
	mpz_init(m);
	mpz_init(s);
	if (ok) {
		switch (hash) {
		case CKM_SHA_1: ok = pkcs1_rsa_sha1_encode_digest(m, r.pub.size, in); break;
		case CKM_SHA256: ok = pkcs1_rsa_sha256_encode_digest(m, r.pub.size, in); break;
		case CKM_SHA512: ok = pkcs1_rsa_sha512_encode_digest(m, r.pub.size, in); break;
		default: /* CKM_RSA_PKCS: in is the DigestInfo (at most k - 11 bytes, or Nettle refuses) */
			ok = pkcs1_rsa_digest_encode(m, r.pub.size, len, in);
		}
	}
	ok = ok && checked_root(&r, k, s, m);
	if (ok)
		nettle_put(&r, s, sig);
	mpz_clear(m);
	mpz_clear(s);
	nettle_done(&r);
	return ok;
}

size_t p11_rsa_pss_salt_max(const struct p11_rsa_key *k, CK_MECHANISM_TYPE hash)
{
	/* RFC 8017 9.1.1: emLen = ceil((modBits - 1) / 8) >= hLen + sLen + 2. */
	size_t em = (p11_rsa_bits(k) + 6) / 8, h = p11_rsa_hash_len(hash);
	return em >= h + 2 ? em - h - 2 : 0;
}

bool p11_rsa_sign_pss(const struct p11_rsa_key *k, br_hmac_drbg_context *drbg, CK_MECHANISM_TYPE hash,
		      size_t salt, const uint8_t *h, size_t hlen, uint8_t *sig)
{
	const struct nettle_hash *nh = hash == CKM_SHA_1    ? &nettle_sha1
				       : hash == CKM_SHA256 ? &nettle_sha256
				       : hash == CKM_SHA384 ? &nettle_sha384
				       : hash == CKM_SHA512 ? &nettle_sha512
							    : NULL;
	if (!nh || hlen != p11_rsa_hash_len(hash) || salt > p11_rsa_pss_salt_max(k, hash))
		return false;
	/* RFC 8017 9.1.1 with MGF1 of the same hash: Nettle's encoding (as
	 * its rsa_pss_sha256_sign_digest_tr does it, for any of the four
	 * hashes), then its blinded, checked root. */
	uint8_t salt_bytes[P11_RSA_BYTES_MAX];
	br_hmac_drbg_generate(drbg, salt_bytes, salt);
	struct nettle_rsa r;
	mpz_t m, s;
	bool ok = nettle_load(&r, k);
	mpz_init(m);
	mpz_init(s);
	ok = ok && pss_encode_mgf1(m, mpz_sizeinbase(r.pub.n, 2) - 1, nh, salt, salt_bytes, h) &&
		  checked_root(&r, k, s, m);
	if (ok)
		nettle_put(&r, s, sig);
	mpz_clear(m);
	mpz_clear(s);
	nettle_done(&r);
	wipe(salt_bytes, salt);
	return ok;
}

bool p11_rsa_decrypt(const struct p11_rsa_key *k, br_hmac_drbg_context *drbg, CK_MECHANISM_TYPE hash,
		     const uint8_t *label, size_t label_len, const uint8_t *in, size_t len, uint8_t *out,
		     size_t *outlen)
{
	mbedtls_md_type_t md = md_of(hash);
	if (hash && md == MBEDTLS_MD_NONE)
		return false;
	mbedtls_rsa_context ctx;
	bool ok = load(&ctx, k, true) && len == mbedtls_rsa_get_len(&ctx);
	if (ok && hash) {
		mbedtls_rsa_set_padding(&ctx, MBEDTLS_RSA_PKCS_V21, md);
		ok = !mbedtls_rsa_rsaes_oaep_decrypt(&ctx, rng, drbg, MBEDTLS_RSA_PRIVATE, label, label_len, outlen,
						     in, out, len);
	} else if (ok) {
		ok = !mbedtls_rsa_rsaes_pkcs1_v15_decrypt(&ctx, rng, drbg, MBEDTLS_RSA_PRIVATE, outlen, in, out, len);
	}
	mbedtls_rsa_free(&ctx);
	return ok;
}

bool p11_rsa_verify_pkcs1(const struct p11_rsa_key *k, CK_MECHANISM_TYPE hash, const uint8_t *in, size_t len,
			  const uint8_t *sig)
{
	mbedtls_md_type_t md = md_of(hash);
	if (hash && (md == MBEDTLS_MD_NONE || len != p11_rsa_hash_len(hash)))
		return false;
	mbedtls_rsa_context ctx;
	bool ok = load(&ctx, k, false) && (hash || len + 11 <= mbedtls_rsa_get_len(&ctx)) &&
		  !mbedtls_rsa_rsassa_pkcs1_v15_verify(&ctx, NULL, NULL, MBEDTLS_RSA_PUBLIC, md, (unsigned)len, in,
						       sig);
	mbedtls_rsa_free(&ctx);
	return ok;
}

bool p11_rsa_verify_pss(const struct p11_rsa_key *k, CK_MECHANISM_TYPE hash, size_t salt, const uint8_t *h,
			size_t hlen, const uint8_t *sig)
{
	mbedtls_md_type_t md = md_of(hash);
	if (md == MBEDTLS_MD_NONE || hlen != p11_rsa_hash_len(hash))
		return false;
	mbedtls_rsa_context ctx;
	bool ok = load(&ctx, k, false) &&
		  !mbedtls_rsa_rsassa_pss_verify_ext(&ctx, NULL, NULL, MBEDTLS_RSA_PUBLIC, md, (unsigned)hlen, h, md,
						     (int)salt, sig);
	mbedtls_rsa_free(&ctx);
	return ok;
}

size_t p11_rsa_encrypt_max(const struct p11_rsa_key *k, CK_MECHANISM_TYPE hash)
{
	/* RFC 8017 7.1.1 (k - 2 hLen - 2) and 7.2.1 (k - 11). */
	size_t n = (p11_rsa_bits(k) + 7) / 8, over = hash ? 2 * p11_rsa_hash_len(hash) + 2 : 11;
	return n > over ? n - over : 0;
}

bool p11_rsa_encrypt(const struct p11_rsa_key *k, br_hmac_drbg_context *drbg, CK_MECHANISM_TYPE hash,
		     const uint8_t *label, size_t label_len, const uint8_t *in, size_t len, uint8_t *out)
{
	mbedtls_md_type_t md = md_of(hash);
	if ((hash && md == MBEDTLS_MD_NONE) || len > p11_rsa_encrypt_max(k, hash))
		return false;
	mbedtls_rsa_context ctx;
	bool ok = load(&ctx, k, false);
	if (ok && hash) {
		mbedtls_rsa_set_padding(&ctx, MBEDTLS_RSA_PKCS_V21, md);
		ok = !mbedtls_rsa_rsaes_oaep_encrypt(&ctx, rng, drbg, MBEDTLS_RSA_PUBLIC, label, label_len, len, in,
						     out);
	} else if (ok) {
		ok = !mbedtls_rsa_rsaes_pkcs1_v15_encrypt(&ctx, rng, drbg, MBEDTLS_RSA_PUBLIC, len, in, out);
	}
	mbedtls_rsa_free(&ctx);
	return ok;
}

/* SPDX-License-Identifier: ISC */
/* RSA on BearSSL's i31 code: see agent_rsa.h. */
#include "agent_rsa.h"

#include <string.h>

#include <bearssl/bearssl_hash.h>
#include <bearssl/bearssl_rsa.h>

#include "wipe.h"
#include "bearssl_i31.h"

#define F AGENT_RSA_FACTOR_MAX
/* i31 words for an integer of up to F bytes (bearssl_i31.h). */
#define FACTOR_WORDS (1 + (F * 8 + 30) / 31)

/* The secret's fields, in this order, F bytes each. */
enum { P, Q, DP, DQ, IQ };

/* n's length in bits; 0 if n is zero. */
static uint32_t n_bitlen(const uint8_t pub[AGENT_RSA_PUB])
{
	const uint8_t *n = pub + AGENT_RSA_E_MAX;
	size_t i = 0;
	while (i < AGENT_RSA_N_MAX && n[i] == 0)
		i++;
	if (i == AGENT_RSA_N_MAX)
		return 0;
	uint32_t bits = (uint32_t)(AGENT_RSA_N_MAX - i) * 8;
	for (unsigned top = n[i]; !(top & 0x80); top <<= 1)
		bits--;
	return bits;
}

/* BearSSL's views of a key in the store's layout (no copies). */
static void views(const uint8_t secret[AGENT_RSA_SECRET], const uint8_t pub[AGENT_RSA_PUB],
		  br_rsa_private_key *sk, br_rsa_public_key *pk)
{
	uint8_t *s = (uint8_t *)secret;
	sk->n_bitlen = n_bitlen(pub);
	sk->p = s + P * F, sk->plen = F;
	sk->q = s + Q * F, sk->qlen = F;
	sk->dp = s + DP * F, sk->dplen = F;
	sk->dq = s + DQ * F, sk->dqlen = F;
	sk->iq = s + IQ * F, sk->iqlen = F;
	size_t nlen = (sk->n_bitlen + 7) / 8, elen = AGENT_RSA_E_MAX;
	while (elen > 1 && pub[AGENT_RSA_E_MAX - elen] == 0)
		elen--;
	pk->n = (uint8_t *)pub + AGENT_RSA_PUB - nlen, pk->nlen = nlen;
	pk->e = (uint8_t *)pub + AGENT_RSA_E_MAX - elen, pk->elen = elen;
}

/* A PKCS#1 v1.5 signature of the hash h, verified with the public key
 * before it is returned. */
static bool sign_checked(const br_rsa_private_key *sk, const br_rsa_public_key *pk,
			 const unsigned char *oid, const uint8_t *h, size_t hlen,
			 uint8_t sig[AGENT_RSA_N_MAX])
{
	uint8_t back[64];
	if (sk->n_bitlen < AGENT_RSA_MIN_BITS || sk->n_bitlen > AGENT_RSA_MAX_BITS || hlen > sizeof back)
		return false;
	return br_rsa_i31_pkcs1_sign(oid, h, hlen, sk, sig) == 1 &&
	       br_rsa_i31_pkcs1_vrfy(sig, pk->nlen, oid, hlen, pk, back) == 1 &&
	       memcmp(back, h, hlen) == 0;
}

/* The key signs, and the signature verifies with its e and n. */
static bool works(const uint8_t secret[AGENT_RSA_SECRET], const uint8_t pub[AGENT_RSA_PUB])
{
	static const char probe[] = "cloak ssh-agent: RSA key check";
	br_rsa_private_key sk;
	br_rsa_public_key pk;
	br_sha256_context c;
	uint8_t h[32], sig[AGENT_RSA_N_MAX];
	views(secret, pub, &sk, &pk);
	br_sha256_init(&c);
	br_sha256_update(&c, probe, sizeof probe - 1);
	br_sha256_out(&c, h);
	return sign_checked(&sk, &pk, BR_HASH_OID_SHA256, h, sizeof h, sig);
}

/* out = d mod (f - 1), F bytes; f must be odd, so f - 1 is f with its
 * lowest bit cleared. */
static bool d_mod(struct wire_bytes d, struct wire_bytes f, uint8_t out[F])
{
	uint8_t fm1[F];
	uint32_t m[FACTOR_WORDS], x[FACTOR_WORDS];
	bool ok = f.len && f.len <= F && (f.p[f.len - 1] & 1) && d.len <= AGENT_RSA_N_MAX;
	if (ok) {
		memcpy(fm1, f.p, f.len);
		fm1[f.len - 1] &= 0xfe;
		br_i31_decode(m, fm1, f.len);
		ok = m[0] != 0; /* f = 1 */
	}
	if (ok) {
		br_i31_decode_reduce(x, d.p, d.len, m);
		br_i31_encode(out, F, x);
	}
	wipe(fm1, sizeof fm1);
	wipe(m, sizeof m);
	wipe(x, sizeof x);
	return ok;
}

/* Copies b (at most F bytes) right-aligned into the field at out. */
static bool put_field(uint8_t *out, struct wire_bytes b)
{
	if (b.len > F)
		return false;
	memcpy(out + F - b.len, b.p, b.len);
	return true;
}

bool rsa_import(const struct agent_rsa_fields *f, uint8_t secret[AGENT_RSA_SECRET],
		uint8_t pub[AGENT_RSA_PUB])
{
	memset(secret, 0, AGENT_RSA_SECRET);
	memset(pub, 0, AGENT_RSA_PUB);
	bool ok = f->e.len <= AGENT_RSA_E_MAX && f->n.len <= AGENT_RSA_N_MAX;
	if (ok)
		wire_rsa_pub_layout(f->e, f->n, pub);
	ok = ok && put_field(secret + P * F, f->p) && put_field(secret + Q * F, f->q) &&
	     put_field(secret + IQ * F, f->iqmp) && d_mod(f->d, f->p, secret + DP * F) &&
	     d_mod(f->d, f->q, secret + DQ * F) && works(secret, pub);
	if (!ok)
		wipe(secret, AGENT_RSA_SECRET);
	return ok;
}

bool rsa_sign(const uint8_t secret[AGENT_RSA_SECRET], const uint8_t pub[AGENT_RSA_PUB],
	      bool sha512, const void *data, size_t data_len, uint8_t sig[AGENT_RSA_N_MAX],
	      size_t *len)
{
	br_rsa_private_key sk;
	br_rsa_public_key pk;
	uint8_t h[64];
	size_t hlen;
	views(secret, pub, &sk, &pk);
	if (sha512) {
		br_sha512_context c;
		br_sha512_init(&c);
		br_sha512_update(&c, data, data_len);
		br_sha512_out(&c, h);
		hlen = 64;
	} else {
		br_sha256_context c;
		br_sha256_init(&c);
		br_sha256_update(&c, data, data_len);
		br_sha256_out(&c, h);
		hlen = 32;
	}
	*len = pk.nlen;
	return sign_checked(&sk, &pk, sha512 ? BR_HASH_OID_SHA512 : BR_HASH_OID_SHA256, h, hlen,
			    sig);
}

bool rsa_keygen(const br_prng_class **drbg, unsigned bits, uint8_t secret[AGENT_RSA_SECRET],
		uint8_t pub[AGENT_RSA_PUB])
{
	uint8_t kpriv[BR_RSA_KBUF_PRIV_SIZE(AGENT_RSA_MAX_BITS)];
	uint8_t kpub[BR_RSA_KBUF_PUB_SIZE(AGENT_RSA_MAX_BITS)];
	br_rsa_private_key sk;
	br_rsa_public_key pk;
	memset(secret, 0, AGENT_RSA_SECRET);
	memset(pub, 0, AGENT_RSA_PUB);
	bool ok = bits >= AGENT_RSA_MIN_BITS && bits <= AGENT_RSA_MAX_BITS &&
		  br_rsa_i31_keygen(drbg, &sk, kpriv, &pk, kpub, bits, 65537) == 1;
	if (ok) {
		wire_rsa_pub_layout((struct wire_bytes){ pk.e, pk.elen },
				    (struct wire_bytes){ pk.n, pk.nlen }, pub);
		ok = put_field(secret + P * F, (struct wire_bytes){ sk.p, sk.plen }) &&
		     put_field(secret + Q * F, (struct wire_bytes){ sk.q, sk.qlen }) &&
		     put_field(secret + DP * F, (struct wire_bytes){ sk.dp, sk.dplen }) &&
		     put_field(secret + DQ * F, (struct wire_bytes){ sk.dq, sk.dqlen }) &&
		     put_field(secret + IQ * F, (struct wire_bytes){ sk.iq, sk.iqlen }) &&
		     works(secret, pub);
	}
	wipe(kpriv, sizeof kpriv);
	wipe(&sk, sizeof sk);
	if (!ok)
		wipe(secret, AGENT_RSA_SECRET);
	return ok;
}

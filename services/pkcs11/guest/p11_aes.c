/* SPDX-License-Identifier: ISC */
/* AES on BearSSL's aes_x86ni or aes_ct, key wrapping and CMAC on Nettle:
 * see p11_aes.h. */
#include "p11_aes.h"

#include <stdlib.h>
#include <string.h>

#include <bearssl/bearssl_hash.h>
#include <nettle/nist-keywrap.h>

#include "wipe.h"

/* ---- the code: BearSSL's, chosen by CPUID */

/*
 * aes_x86ni and ghash_pclmul run on the CPU's AES-NI and PCLMULQDQ;
 * aes_ct (bitsliced) and ghash_ctmul64 (multiplications with holes) in
 * general registers. BearSSL documents all four as constant-time
 * (bearssl.org/constanttime.html). Its *_get functions return the
 * hardware code only where CPUID names the instructions, which the monitor
 * shows only where KVM runs guest code on the CPU (monitor/x86/cpu.c).
 * AES is all aes_x86ni or all aes_ct, never a mix.
 */
struct aes_code {
	const char *name;
	const br_block_cbcenc_class *cbcenc;
	const br_block_cbcdec_class *cbcdec;
	const br_block_ctr_class *ctr;
	br_ghash ghash;
};
static const struct aes_code portable = {
	"aes_ct, ghash_ctmul64", &br_aes_ct_cbcenc_vtable, &br_aes_ct_cbcdec_vtable,
	&br_aes_ct_ctr_vtable, br_ghash_ctmul64,
};
static struct aes_code cpu_code;
static bool cpu_asked, force_portable;

static const struct aes_code *code(void)
{
	if (!cpu_asked) {
		cpu_code = portable;
		const br_block_cbcenc_class *e = br_aes_x86ni_cbcenc_get_vtable();
		const br_block_cbcdec_class *d = br_aes_x86ni_cbcdec_get_vtable();
		const br_block_ctr_class *c = br_aes_x86ni_ctr_get_vtable();
		if (e && d && c)
			cpu_code.cbcenc = e, cpu_code.cbcdec = d, cpu_code.ctr = c;
		br_ghash g = br_ghash_pclmul_get();
		if (g)
			cpu_code.ghash = g;
		cpu_code.name = e && d && c ? (g ? "aes_x86ni, ghash_pclmul" : "aes_x86ni, ghash_ctmul64")
					    : (g ? "aes_ct, ghash_pclmul" : "aes_ct, ghash_ctmul64");
		cpu_asked = true;
	}
	return force_portable ? &portable : &cpu_code;
}

const char *p11_aes_impl(void)
{
	return code()->name;
}

void p11_aes_force_portable(bool on)
{
	force_portable = on;
}

bool p11_aes_mode(CK_MECHANISM_TYPE mech)
{
	return mech == CKM_AES_ECB || mech == CKM_AES_CBC || mech == CKM_AES_CBC_PAD || mech == CKM_AES_CTR ||
	       mech == CKM_AES_GCM;
}

static bool key_len_ok(size_t klen)
{
	return klen == 16 || klen == 24 || klen == 32;
}

/* The block function as Nettle's nettle_cipher_func (ctx: a
 * br_aes_gen_cbcenc_keys): one block at a time, as CBC with a zero IV
 * (which is the block function itself). */
static void ecb_encrypt(const void *ctx, size_t length, uint8_t *dst, const uint8_t *src)
{
	const br_block_cbcenc_class *const *k = ctx;
	for (size_t i = 0; i + P11_AES_BLOCK <= length; i += P11_AES_BLOCK) {
		uint8_t iv[P11_AES_BLOCK] = { 0 };
		memmove(dst + i, src + i, P11_AES_BLOCK);
		(*k)->run(k, iv, dst + i, P11_AES_BLOCK);
	}
}

/* The decryption direction; it also keeps the first half of the last
 * block it produced, which is the integrity value A once RFC 3394's
 * unwrapping has run (its last step is a block decryption whose first
 * half is A: RFC 3394 2.2.2, RFC 5649 4.2). */
struct ecb_dec {
	br_aes_gen_cbcdec_keys k;
	uint8_t last[8];
};

static void ecb_decrypt(const void *ctx, size_t length, uint8_t *dst, const uint8_t *src)
{
	struct ecb_dec *d = (struct ecb_dec *)ctx;
	for (size_t i = 0; i + P11_AES_BLOCK <= length; i += P11_AES_BLOCK) {
		uint8_t iv[P11_AES_BLOCK] = { 0 };
		memmove(dst + i, src + i, P11_AES_BLOCK);
		d->k.vtable->run(&d->k.vtable, iv, dst + i, P11_AES_BLOCK);
		memcpy(d->last, dst + i, sizeof d->last);
	}
}

/* ---- the five modes */

/* CK_AES_CTR_PARAMS: ulCounterBits (1..128) and the first counter
 * block. The counter may not wrap: the blocks it can still take. */
static CK_RV ctr_params(struct p11_aes *a, const uint8_t *param, size_t plen)
{
	CK_AES_CTR_PARAMS p;
	if (plen != sizeof p)
		return CKR_MECHANISM_PARAM_INVALID;
	memcpy(&p, param, sizeof p);
	if (p.ulCounterBits < 1 || p.ulCounterBits > 128)
		return CKR_MECHANISM_PARAM_INVALID;
	memcpy(a->iv, p.cb, P11_AES_BLOCK);
	if (p.ulCounterBits >= 64) {
		a->ctr_blocks = UINT64_MAX; /* more than anything can send */
		return CKR_OK;
	}
	uint64_t low = 0;
	for (int i = 8; i < 16; i++)
		low = low << 8 | a->iv[i];
	uint64_t mask = (1ull << p.ulCounterBits) - 1;
	a->ctr_blocks = mask - (low & mask) + 1;
	return CKR_OK;
}

/* The flattened GCM parameter (p11_aes.h). Tags of 96 to 128 bits, or
 * 64 or 32 (NIST SP 800-38D 5.2.1.2), whole bytes. */
static CK_RV gcm_params(struct p11_aes *a, const uint8_t *param, size_t plen)
{
	struct wire_reader r;
	wire_reader_init(&r, param, plen);
	uint64_t iv_bits = wire_get_u64(&r), tag_bits = wire_get_u64(&r);
	struct wire_bytes iv = p11_get_bytes(&r, P11_GCM_IV_MAX), aad = wire_get_string(&r);
	if (!wire_done(&r) || !iv.len || (iv_bits && iv_bits != 8 * iv.len))
		return CKR_MECHANISM_PARAM_INVALID;
	if (tag_bits % 8 || !(tag_bits == 32 || tag_bits == 64 || (tag_bits >= 96 && tag_bits <= 128)))
		return CKR_MECHANISM_PARAM_INVALID;
	a->tag_len = (uint32_t)(tag_bits / 8);
	br_gcm_init(&a->gcm, &a->k.ctr.vtable, code()->ghash);
	br_gcm_reset(&a->gcm, iv.p, iv.len);
	br_gcm_aad_inject(&a->gcm, aad.p, aad.len);
	br_gcm_flip(&a->gcm);
	return CKR_OK;
}

CK_RV p11_aes_init(struct p11_aes *a, CK_MECHANISM_TYPE mech, bool encrypt, const uint8_t *key, size_t klen,
		   const uint8_t *param, size_t plen)
{
	wipe(a, sizeof *a);
	if (!p11_aes_mode(mech))
		return CKR_MECHANISM_INVALID;
	if (!key_len_ok(klen))
		return CKR_KEY_SIZE_RANGE;
	a->mech = mech;
	a->encrypt = encrypt;
	CK_RV rv = CKR_OK;
	switch (mech) {
	case CKM_AES_ECB:
		if (plen)
			return CKR_MECHANISM_PARAM_INVALID;
		break;
	case CKM_AES_CBC:
	case CKM_AES_CBC_PAD:
		if (plen != P11_AES_BLOCK)
			return CKR_MECHANISM_PARAM_INVALID;
		memcpy(a->iv, param, P11_AES_BLOCK);
		break;
	case CKM_AES_CTR:
		rv = ctr_params(a, param, plen);
		break;
	default: /* CKM_AES_GCM: its subkeys first (gcm_params hashes with them) */
		break;
	}
	if (rv != CKR_OK)
		return rv;
	const struct aes_code *cc = code();
	if (mech == CKM_AES_CTR || mech == CKM_AES_GCM)
		cc->ctr->init(&a->k.ctr.vtable, key, klen);
	else if (encrypt)
		cc->cbcenc->init(&a->k.enc.vtable, key, klen);
	else
		cc->cbcdec->init(&a->k.dec.vtable, key, klen);
	if (mech == CKM_AES_GCM && (rv = gcm_params(a, param, plen)) != CKR_OK)
		p11_aes_end(a);
	return rv;
}

/* Whether this mode holds back the last whole block of a decryption
 * (CBC_PAD: it may be all padding). */
static bool holds_last(const struct p11_aes *a)
{
	return a->mech == CKM_AES_CBC_PAD && !a->encrypt;
}

size_t p11_aes_update_len(const struct p11_aes *a, size_t len)
{
	switch (a->mech) {
	case CKM_AES_CTR:
		return len;
	case CKM_AES_GCM:
		return a->encrypt ? len : 0;
	default: {
		size_t total = a->nbuf + len, whole = total - total % P11_AES_BLOCK;
		/* A CBC_PAD decryption keeps one whole block back when the
		 * input ends on a block's end. */
		if (holds_last(a) && whole && whole == total)
			whole -= P11_AES_BLOCK;
		return whole;
	}
	}
}

size_t p11_aes_oneshot_len(const struct p11_aes *a, size_t len)
{
	switch (a->mech) {
	case CKM_AES_CBC_PAD:
		return a->encrypt ? (len / P11_AES_BLOCK + 1) * P11_AES_BLOCK : len;
	case CKM_AES_GCM:
		return a->encrypt ? len + a->tag_len : len >= a->tag_len ? len - a->tag_len : 0;
	default:
		return len;
	}
}

size_t p11_aes_final_len(const struct p11_aes *a)
{
	switch (a->mech) {
	case CKM_AES_CTR:
		return 0;
	case CKM_AES_GCM:
		if (a->encrypt)
			return a->tag_len;
		if (a->finishing)
			return a->held_len - a->out_pos;
		return a->held_len >= a->tag_len ? a->held_len - a->tag_len : 0;
	case CKM_AES_CBC_PAD:
		return a->encrypt ? P11_AES_BLOCK : (a->nbuf == P11_AES_BLOCK ? P11_AES_BLOCK - 1 : 0);
	default:
		return 0;
	}
}

/* CTR over n bytes at p, in place, from the counter in a->iv: BearSSL's
 * CTR takes a 12-byte nonce and a 32-bit counter, so runs are split
 * where the low 32 bits wrap and the carry goes into the nonce here. */
static void ctr_blocks(struct p11_aes *a, uint8_t *p, size_t n)
{
	while (n) {
		uint32_t cc = (uint32_t)a->iv[12] << 24 | (uint32_t)a->iv[13] << 16 | (uint32_t)a->iv[14] << 8 |
			      a->iv[15];
		uint64_t room = (uint64_t)UINT32_MAX - cc + 1; /* blocks before the low 32 bits wrap */
		size_t blocks = (n + P11_AES_BLOCK - 1) / P11_AES_BLOCK;
		size_t take = blocks <= room ? n : (size_t)room * P11_AES_BLOCK;
		cc = a->k.ctr.vtable->run(&a->k.ctr.vtable, a->iv, cc, p, take);
		a->iv[12] = (uint8_t)(cc >> 24), a->iv[13] = (uint8_t)(cc >> 16);
		a->iv[14] = (uint8_t)(cc >> 8), a->iv[15] = (uint8_t)cc;
		if (!cc)
			for (int i = 11; i >= 0 && !++a->iv[i]; i--)
				;
		p += take;
		n -= take;
	}
}

static CK_RV ctr_update(struct p11_aes *a, const uint8_t *in, size_t len, uint8_t *out)
{
	size_t use = len < a->ks_left ? len : a->ks_left;
	uint64_t fresh = len > use ? (len - use + P11_AES_BLOCK - 1) / P11_AES_BLOCK : 0;
	if (fresh > a->ctr_blocks)
		return CKR_DATA_LEN_RANGE;
	for (size_t i = 0; i < use; i++)
		out[i] = in[i] ^ a->ks[P11_AES_BLOCK - a->ks_left + i];
	a->ks_left -= (uint32_t)use;
	in += use, out += use, len -= use;
	if (a->ctr_blocks != UINT64_MAX)
		a->ctr_blocks -= fresh;
	size_t whole = len - len % P11_AES_BLOCK;
	memmove(out, in, whole);
	ctr_blocks(a, out, whole);
	if (len > whole) { /* a block's key stream, partly used now */
		memset(a->ks, 0, sizeof a->ks);
		ctr_blocks(a, a->ks, P11_AES_BLOCK);
		for (size_t i = 0; i < len - whole; i++)
			out[whole + i] = in[whole + i] ^ a->ks[i];
		a->ks_left = (uint32_t)(P11_AES_BLOCK - (len - whole));
	}
	return CKR_OK;
}

/* Whole blocks through ECB or CBC, in place. */
static void blocks(struct p11_aes *a, uint8_t *p, size_t n)
{
	if (a->mech == CKM_AES_ECB) {
		for (size_t i = 0; i < n; i += P11_AES_BLOCK) {
			uint8_t iv[P11_AES_BLOCK] = { 0 };
			if (a->encrypt)
				a->k.enc.vtable->run(&a->k.enc.vtable, iv, p + i, P11_AES_BLOCK);
			else
				a->k.dec.vtable->run(&a->k.dec.vtable, iv, p + i, P11_AES_BLOCK);
		}
	} else if (a->encrypt) {
		a->k.enc.vtable->run(&a->k.enc.vtable, a->iv, p, n);
	} else {
		a->k.dec.vtable->run(&a->k.dec.vtable, a->iv, p, n);
	}
}

static CK_RV gcm_hold(struct p11_aes *a, const uint8_t *in, size_t len)
{
	if (len > P11_GCM_HELD_MAX - a->held_len)
		return CKR_DEVICE_MEMORY;
	if (a->held_len + len > a->held_cap) {
		size_t cap = a->held_cap ? a->held_cap : 4096;
		while (cap < a->held_len + len)
			cap *= 2;
		uint8_t *n = malloc(cap);
		if (!n)
			return CKR_DEVICE_MEMORY;
		if (a->held_len)
			memcpy(n, a->held, a->held_len);
		if (a->held) {
			wipe(a->held, a->held_cap);
			free(a->held);
		}
		a->held = n;
		a->held_cap = cap;
	}
	memcpy(a->held + a->held_len, in, len);
	a->held_len += len;
	return CKR_OK;
}

CK_RV p11_aes_update(struct p11_aes *a, const uint8_t *in, size_t len, uint8_t *out, size_t *outlen)
{
	*outlen = 0;
	if (a->mech == CKM_AES_CTR) {
		CK_RV rv = ctr_update(a, in, len, out);
		if (rv == CKR_OK)
			*outlen = len;
		return rv;
	}
	if (a->mech == CKM_AES_GCM) {
		if (!a->encrypt)
			return gcm_hold(a, in, len);
		memmove(out, in, len);
		br_gcm_run(&a->gcm, 1, out, len);
		*outlen = len;
		return CKR_OK;
	}
	size_t n = p11_aes_update_len(a, len), done = 0;
	/* The held bytes first, then the input's whole blocks, then hold
	 * what is left (in and out may be the same buffer: out never runs
	 * ahead of in). */
	if (n) {
		memcpy(a->buf + a->nbuf, in, P11_AES_BLOCK - a->nbuf);
		uint8_t first[P11_AES_BLOCK];
		memcpy(first, a->buf, P11_AES_BLOCK);
		done = P11_AES_BLOCK - a->nbuf;
		memmove(out + P11_AES_BLOCK, in + done, n - P11_AES_BLOCK);
		memcpy(out, first, P11_AES_BLOCK);
		wipe(first, sizeof first);
		blocks(a, out, n);
		done += n - P11_AES_BLOCK;
		a->nbuf = 0;
	}
	memcpy(a->buf + a->nbuf, in + done, len - done);
	a->nbuf += (uint32_t)(len - done);
	*outlen = n;
	return CKR_OK;
}

/* CBC_PAD's final block: PKCS#7 padding added, or checked and taken off
 * without a branch on the padding's bytes. */
static CK_RV cbc_pad_final(struct p11_aes *a, uint8_t *out, size_t *outlen)
{
	if (a->encrypt) {
		uint8_t pad = (uint8_t)(P11_AES_BLOCK - a->nbuf);
		memset(a->buf + a->nbuf, pad, pad);
		memcpy(out, a->buf, P11_AES_BLOCK);
		blocks(a, out, P11_AES_BLOCK);
		*outlen = P11_AES_BLOCK;
		return CKR_OK;
	}
	if (a->nbuf != P11_AES_BLOCK)
		return CKR_ENCRYPTED_DATA_LEN_RANGE;
	uint8_t b[P11_AES_BLOCK];
	memcpy(b, a->buf, sizeof b);
	blocks(a, b, sizeof b);
	unsigned pad = b[P11_AES_BLOCK - 1], bad = (unsigned)(pad - 1) >> 8 | (unsigned)(16 - pad) >> 8;
	for (unsigned i = 0; i < P11_AES_BLOCK; i++) {
		unsigned in_pad = (unsigned)(P11_AES_BLOCK - 1 - i - pad) >> 8 & 1; /* i >= 16 - pad */
		bad |= in_pad & ((unsigned)(b[i] ^ pad) + 0xff) >> 8;
	}
	CK_RV rv = bad & 1 ? CKR_ENCRYPTED_DATA_INVALID : CKR_OK;
	if (rv == CKR_OK) {
		memcpy(out, b, P11_AES_BLOCK - pad);
		*outlen = P11_AES_BLOCK - pad;
	}
	wipe(b, sizeof b);
	return rv;
}

CK_RV p11_aes_final(struct p11_aes *a, uint8_t *out, size_t max, size_t *outlen, bool *more)
{
	*outlen = 0;
	*more = false;
	switch (a->mech) {
	case CKM_AES_CTR:
		return CKR_OK;
	case CKM_AES_CBC_PAD:
		return cbc_pad_final(a, out, outlen);
	case CKM_AES_GCM:
		break;
	default: /* ECB, CBC: the input must have been whole blocks */
		if (a->nbuf)
			return a->encrypt ? CKR_DATA_LEN_RANGE : CKR_ENCRYPTED_DATA_LEN_RANGE;
		return CKR_OK;
	}
	if (a->encrypt) {
		uint8_t tag[P11_AES_BLOCK];
		br_gcm_get_tag(&a->gcm, tag);
		memcpy(out, tag, a->tag_len);
		*outlen = a->tag_len;
		return CKR_OK;
	}
	if (!a->finishing) {
		if (a->held_len < a->tag_len)
			return CKR_ENCRYPTED_DATA_LEN_RANGE;
		size_t n = a->held_len - a->tag_len;
		br_gcm_run(&a->gcm, 0, a->held, n);
		if (!br_gcm_check_tag_trunc(&a->gcm, a->held + n, a->tag_len)) {
			wipe(a->held, a->held_len);
			return CKR_ENCRYPTED_DATA_INVALID;
		}
		a->held_len = n;
		a->finishing = true;
	}
	size_t n = a->held_len - a->out_pos < max ? a->held_len - a->out_pos : max;
	memcpy(out, a->held + a->out_pos, n);
	a->out_pos += n;
	*outlen = n;
	*more = a->out_pos < a->held_len;
	return CKR_OK;
}

void p11_aes_end(struct p11_aes *a)
{
	if (a->held) {
		wipe(a->held, a->held_cap);
		free(a->held);
	}
	wipe(a, sizeof *a);
}

/* ---- key wrapping */

static const uint8_t kw_iv[8] = { 0xa6, 0xa6, 0xa6, 0xa6, 0xa6, 0xa6, 0xa6, 0xa6 };
static const uint8_t kwp_prefix[4] = { 0xa6, 0x59, 0x59, 0xa6 };

size_t p11_aes_wrap_len(bool pad, size_t len)
{
	if (!pad)
		return len >= 16 && len % 8 == 0 ? len + 8 : 0;
	if (!len || len > UINT32_MAX)
		return 0;
	return (len + 7) / 8 * 8 + 8;
}

size_t p11_aes_wrap(bool pad, const uint8_t *kek, size_t klen, const uint8_t *in, size_t len, uint8_t *out)
{
	size_t n = p11_aes_wrap_len(pad, len);
	if (!n || !key_len_ok(klen))
		return 0;
	br_aes_gen_cbcenc_keys k;
	code()->cbcenc->init(&k.vtable, kek, klen);
	if (!pad) {
		nist_keywrap16(&k, ecb_encrypt, kw_iv, n, out, in);
	} else {
		/* RFC 5649: the prefix and the message's length, the message
		 * padded with zeros to whole semiblocks. */
		uint8_t aiv[8];
		memcpy(aiv, kwp_prefix, 4);
		aiv[4] = (uint8_t)(len >> 24), aiv[5] = (uint8_t)(len >> 16), aiv[6] = (uint8_t)(len >> 8);
		aiv[7] = (uint8_t)len;
		if (n == 16) { /* one semiblock: a single block operation */
			memcpy(out, aiv, 8);
			memset(out + 8, 0, 8);
			memcpy(out + 8, in, len);
			ecb_encrypt(&k, P11_AES_BLOCK, out, out);
		} else {
			uint8_t *p = malloc(n - 8); /* the message padded */
			if (!p) {
				wipe(&k, sizeof k);
				return 0;
			}
			memcpy(p, in, len);
			memset(p + len, 0, n - 8 - len);
			nist_keywrap16(&k, ecb_encrypt, aiv, n, out, p);
			wipe(p, n - 8);
			free(p);
		}
	}
	wipe(&k, sizeof k);
	return n;
}

bool p11_aes_unwrap(bool pad, const uint8_t *kek, size_t klen, const uint8_t *in, size_t len, uint8_t *out,
		    size_t *outlen)
{
	*outlen = 0;
	if (!key_len_ok(klen) || len % 8 || len < 16 || (!pad && len < 24))
		return false;
	struct ecb_dec d;
	code()->cbcdec->init(&d.k.vtable, kek, klen);
	size_t n = len - 8;
	bool ok;
	if (!pad) {
		ok = nist_keyunwrap16(&d, ecb_decrypt, kw_iv, n, out, in) == 1;
	} else {
		uint8_t a[8];
		if (n == 8) {
			uint8_t b[P11_AES_BLOCK];
			ecb_decrypt(&d, P11_AES_BLOCK, b, in);
			memcpy(a, b, 8);
			memcpy(out, b + 8, 8);
			wipe(b, sizeof b);
		} else {
			nist_keyunwrap16(&d, ecb_decrypt, kw_iv, n, out, in); /* its verdict is for RFC 3394's IV */
			memcpy(a, d.last, 8);
		}
		/* The prefix, a length in (n - 8, n], zeros after the message:
		 * checked without a branch on any of them. */
		uint32_t mli = (uint32_t)a[4] << 24 | (uint32_t)a[5] << 16 | (uint32_t)a[6] << 8 | a[7];
		unsigned bad = (a[0] ^ kwp_prefix[0]) | (a[1] ^ kwp_prefix[1]) | (a[2] ^ kwp_prefix[2]) |
			       (a[3] ^ kwp_prefix[3]);
		uint64_t lo = n - 8, m = mli;
		bad |= (unsigned)((lo - m) >> 63 ^ 1);	      /* m <= n - 8 */
		bad |= (unsigned)((n - m) >> 63);	      /* m > n */
		for (size_t i = n - 8; i < n; i++) /* the last semiblock's bytes past m */
			bad |= out[i] & (unsigned)(((uint64_t)m - 1 - i) >> 63) * 0xff;
		ok = !bad;
		if (ok)
			n = mli;
		wipe(a, sizeof a);
	}
	if (!ok)
		wipe(out, len - 8);
	else
		*outlen = n;
	wipe(&d, sizeof d);
	return ok;
}

/* ---- CMAC */

bool p11_cmac_init(struct p11_cmac *m, const uint8_t *key, size_t klen)
{
	wipe(m, sizeof *m);
	if (!key_len_ok(klen))
		return false;
	code()->cbcenc->init(&m->k.vtable, key, klen);
	cmac128_set_key(&m->key, &m->k, ecb_encrypt);
	cmac128_init(&m->ctx);
	return true;
}

void p11_cmac_update(struct p11_cmac *m, const uint8_t *in, size_t len)
{
	cmac128_update(&m->ctx, &m->k, ecb_encrypt, len, in);
}

void p11_cmac_out(struct p11_cmac *m, uint8_t tag[P11_AES_BLOCK])
{
	cmac128_digest(&m->ctx, &m->key, &m->k, ecb_encrypt, P11_AES_BLOCK, tag);
	wipe(m, sizeof *m);
}

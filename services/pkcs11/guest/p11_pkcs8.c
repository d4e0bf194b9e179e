/* SPDX-License-Identifier: ISC */
/* PKCS#8 PrivateKeyInfo on Mbed TLS's ASN.1 functions: see p11_pkcs8.h. */
#include "p11_pkcs8.h"

#include <stdio.h>
#include <string.h>

#ifdef CLOAK_RT_STDIO_H
/* The guest's <stdio.h> has no streams; Mbed TLS's headers only name
 * FILE (for functions the token never calls). */
typedef struct p11_no_file FILE;
#endif
#include <mbedtls/asn1.h>
#include <mbedtls/asn1write.h>

#include "wipe.h"

/* id-ecPublicKey (1.2.840.10045.2.1) and rsaEncryption
 * (1.2.840.113549.1.1.1), their contents only. */
static const uint8_t oid_ec[] = { 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01 };
static const uint8_t oid_rsa[] = { 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01 };

/* Mbed TLS writes DER backwards, from the end of the buffer: each step
 * adds its length to *n, or fails the whole (*n set to -1). */
static void add(int *n, int r)
{
	*n = *n < 0 || r < 0 ? -1 : *n + r;
}

/* A SEQUENCE (or another constructed tag) around the len bytes just
 * written. */
static void wrap_in(unsigned char **p, unsigned char *start, int *n, int len, unsigned char tag)
{
	if (*n < 0)
		return;
	add(n, mbedtls_asn1_write_len(p, start, (size_t)len));
	add(n, mbedtls_asn1_write_tag(p, start, tag));
}

/* A non-negative INTEGER from big-endian bytes (leading zeros dropped,
 * one added where the top bit is set). */
static void write_uint(unsigned char **p, unsigned char *start, int *n, const uint8_t *v, size_t len)
{
	while (len > 1 && !*v)
		v++, len--;
	int m = 0;
	add(&m, mbedtls_asn1_write_raw_buffer(p, start, v, len));
	if (len && v[0] & 0x80) {
		if (*p - start < 1)
			m = -1;
		else
			*--*p = 0, add(&m, 1);
	}
	wrap_in(p, start, &m, m, MBEDTLS_ASN1_INTEGER);
	add(n, m);
}

/* The private key inside (ECPrivateKey or RSAPrivateKey), written just
 * before *p: its length, or -1. */
static int inner(const struct p11_object *k, CK_KEY_TYPE kt, unsigned char **p, unsigned char *start,
		 const struct p11_curve **curve)
{
	int n = 0;
	uint32_t len;
	if (kt == CKK_RSA) {
		struct p11_rsa_key key;
		p11_rsa_view(k, &key);
		/* n, e, d, p, q, dp, dq, qinv: p11_rsa.h's order, RFC 8017's */
		for (int i = P11_RSA_PARTS - 1; i >= 0; i--) {
			if (!key.v[i])
				return -1;
			write_uint(p, start, &n, key.v[i], key.len[i]);
		}
		add(&n, mbedtls_asn1_write_int(p, start, 0));
		wrap_in(p, start, &n, n, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE);
		return n;
	}
	*curve = p11_curve_of(k);
	const uint8_t *d = p11_obj_attr(k, CKA_VALUE, &len);
	uint32_t plen;
	const uint8_t *pt = p11_obj_attr(k, CKA_EC_POINT, &plen);
	if (!*curve || !d || len != (*curve)->scalar || !pt || plen < 3)
		return -1;
	/* [1] publicKey BIT STRING, the uncompressed point. */
	int m = 0;
	add(&m, mbedtls_asn1_write_bitstring(p, start, pt + 2, 8 * (plen - 2)));
	wrap_in(p, start, &m, m, MBEDTLS_ASN1_CONTEXT_SPECIFIC | MBEDTLS_ASN1_CONSTRUCTED | 1);
	add(&n, m);
	add(&n, mbedtls_asn1_write_octet_string(p, start, d, len));
	add(&n, mbedtls_asn1_write_int(p, start, 1));
	wrap_in(p, start, &n, n, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE);
	return n;
}

size_t p11_pkcs8_write(const struct p11_object *k, uint8_t *out, size_t cap)
{
	CK_KEY_TYPE kt = p11_obj_ulong(k, CKA_KEY_TYPE, ~0ul);
	if (p11_obj_ulong(k, CKA_CLASS, ~0ul) != CKO_PRIVATE_KEY || (kt != CKK_EC && kt != CKK_RSA))
		return 0;
	unsigned char *p = out + cap;
	const struct p11_curve *curve = NULL;
	int n = inner(k, kt, &p, out, &curve);
	wrap_in(&p, out, &n, n, MBEDTLS_ASN1_OCTET_STRING);
	/* AlgorithmIdentifier: the algorithm and (EC) the curve's OID, or
	 * (RSA) NULL. */
	int a = 0;
	if (kt == CKK_EC)
		add(&a, mbedtls_asn1_write_raw_buffer(&p, out, curve->oid, curve->oid_len));
	else
		add(&a, mbedtls_asn1_write_null(&p, out));
	if (a >= 0)
		add(&a, mbedtls_asn1_write_algorithm_identifier(
				&p, out, (const char *)(kt == CKK_EC ? oid_ec : oid_rsa),
				kt == CKK_EC ? sizeof oid_ec : sizeof oid_rsa, (size_t)a) - a);
	add(&n, a);
	add(&n, mbedtls_asn1_write_int(&p, out, 0));
	wrap_in(&p, out, &n, n, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE);
	if (n <= 0) {
		wipe(out, cap);
		return 0;
	}
	memmove(out, p, (size_t)n);
	wipe(out + n, cap - (size_t)n);
	return (size_t)n;
}

/* Reads a tag's header and checks the tag; false if it is not there. */
static bool tag(unsigned char **p, const unsigned char *end, size_t *len, int t)
{
	return mbedtls_asn1_get_tag(p, end, len, t) == 0;
}

/* A non-negative INTEGER's bytes, without leading zeros. */
static bool read_uint(unsigned char **p, const unsigned char *end, const uint8_t **v, size_t *len)
{
	if (!tag(p, end, len, MBEDTLS_ASN1_INTEGER) || !*len || **p & 0x80)
		return false;
	*v = *p;
	*p += *len;
	while (*len > 1 && !**v)
		(*v)++, (*len)--;
	return true;
}

static bool read_version(unsigned char **p, const unsigned char *end, int want)
{
	int v;
	return mbedtls_asn1_get_int(p, end, &v) == 0 && v == want;
}

static bool read_ec(unsigned char *p, const unsigned char *end, const struct p11_curve *curve, struct p11_pkcs8 *k)
{
	size_t len;
	unsigned char *seq_end;
	if (!tag(&p, end, &len, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE))
		return false;
	seq_end = p + len;
	if (seq_end != end || !read_version(&p, end, 1) || !tag(&p, end, &len, MBEDTLS_ASN1_OCTET_STRING))
		return false;
	k->d = p;
	k->dlen = len;
	p += len;
	/* [0] parameters, if there, must name the same curve; [1] publicKey
	 * is left out: the token computes the point from the scalar. */
	if (p < end && *p == (MBEDTLS_ASN1_CONTEXT_SPECIFIC | MBEDTLS_ASN1_CONSTRUCTED | 0)) {
		if (!tag(&p, end, &len, MBEDTLS_ASN1_CONTEXT_SPECIFIC | MBEDTLS_ASN1_CONSTRUCTED | 0) ||
		    p11_ec_curve(p, len) != curve)
			return false;
		p += len;
	}
	if (p < end && *p == (MBEDTLS_ASN1_CONTEXT_SPECIFIC | MBEDTLS_ASN1_CONSTRUCTED | 1)) {
		if (!tag(&p, end, &len, MBEDTLS_ASN1_CONTEXT_SPECIFIC | MBEDTLS_ASN1_CONSTRUCTED | 1))
			return false;
		p += len;
	}
	k->type = CKK_EC;
	k->curve = curve;
	return p == end && k->dlen && k->dlen <= curve->scalar;
}

static bool read_rsa(unsigned char *p, const unsigned char *end, struct p11_pkcs8 *k)
{
	size_t len;
	if (!tag(&p, end, &len, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE) || p + len != end ||
	    !read_version(&p, end, 0))
		return false;
	for (int i = 0; i < P11_RSA_PARTS; i++)
		if (!read_uint(&p, end, &k->rsa.v[i], &k->rsa.len[i]) || k->rsa.len[i] > P11_RSA_BYTES_MAX)
			return false;
	k->type = CKK_RSA;
	return p == end;
}

bool p11_pkcs8_read(const uint8_t *der, size_t len, struct p11_pkcs8 *k)
{
	memset(k, 0, sizeof *k);
	unsigned char *p = (unsigned char *)der;
	const unsigned char *end = der + len;
	size_t n;
	mbedtls_asn1_buf alg, params;
	if (!tag(&p, end, &n, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE) || p + n != end ||
	    !read_version(&p, end, 0) || mbedtls_asn1_get_alg(&p, end, &alg, &params) ||
	    !tag(&p, end, &n, MBEDTLS_ASN1_OCTET_STRING) || p + n != end)
		return false;
	if (alg.len == sizeof oid_ec && !memcmp(alg.p, oid_ec, sizeof oid_ec)) {
		/* namedCurve: the OID with its tag, as CKA_EC_PARAMS holds it */
		if (params.tag != MBEDTLS_ASN1_OID)
			return false;
		uint8_t oid[16];
		if (params.len + 2 > sizeof oid)
			return false;
		oid[0] = MBEDTLS_ASN1_OID;
		oid[1] = (uint8_t)params.len;
		memcpy(oid + 2, params.p, params.len);
		const struct p11_curve *curve = p11_ec_curve(oid, params.len + 2);
		return curve && read_ec(p, end, curve, k);
	}
	if (alg.len == sizeof oid_rsa && !memcmp(alg.p, oid_rsa, sizeof oid_rsa))
		return (params.tag == MBEDTLS_ASN1_NULL || !params.len) && read_rsa(p, end, k);
	return false;
}

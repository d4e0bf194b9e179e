/* SPDX-License-Identifier: ISC */
/*
 * Three of BearSSL's i31 big-integer routines, which its RSA code uses and
 * libbearssl.a exports but the public headers do not declare. Declared as
 * BearSSL 0.6's src/inner.h declares them (Debian ships 0.6): an integer
 * x[] is x[0] = its "encoded bit length", then 31-bit words, least
 * significant first; a buffer for up to B bits needs 1 + (B + 30) / 31
 * words.
 */
#ifndef BEARSSL_I31_H
#define BEARSSL_I31_H

#include <stddef.h>
#include <stdint.h>

/* Decodes a big-endian unsigned integer of len bytes. */
void br_i31_decode(uint32_t *x, const void *src, size_t len);
/* Decodes a big-endian unsigned integer and reduces it modulo m[] (whose
 * announced bit length is its true one); x[] gets m's announced bit
 * length. x[] must not be m[]. */
void br_i31_decode_reduce(uint32_t *x, const void *src, size_t len, const uint32_t *m);
/* Encodes x[] big-endian into exactly len bytes (truncated or
 * zero-extended). */
void br_i31_encode(void *dst, size_t len, const uint32_t *x);

#endif

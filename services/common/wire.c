/* SPDX-License-Identifier: ISC */
/* The services' byte codec: see wire.h. Every length a peer sends is
 * checked against what is left before anything is used. */
#include "wire.h"

#include <string.h>

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

void wire_reader_init(struct wire_reader *r, const void *p, size_t len)
{
	r->p = p;
	r->left = len;
	r->bad = false;
}

const uint8_t *wire_get_raw(struct wire_reader *r, size_t n)
{
	if (r->bad || n > r->left) {
		r->bad = true;
		r->left = 0;
		return NULL;
	}
	const uint8_t *p = r->p;
	r->p += n;
	r->left -= n;
	return p;
}

uint8_t wire_get_u8(struct wire_reader *r)
{
	const uint8_t *p = wire_get_raw(r, 1);
	return p ? p[0] : 0;
}

uint32_t wire_get_u32(struct wire_reader *r)
{
	const uint8_t *p = wire_get_raw(r, 4);
	return p ? be32(p) : 0;
}

uint64_t wire_get_u64(struct wire_reader *r)
{
	uint64_t hi = wire_get_u32(r);
	return hi << 32 | wire_get_u32(r);
}

struct wire_bytes wire_get_string(struct wire_reader *r)
{
	struct wire_bytes b = { NULL, 0 };
	uint32_t n = wire_get_u32(r);
	const uint8_t *p = wire_get_raw(r, n);
	if (p) {
		b.p = p;
		b.len = n;
	}
	return b;
}

struct wire_bytes wire_get_rest(struct wire_reader *r)
{
	struct wire_bytes b = { r->bad ? NULL : r->p, r->bad ? 0 : r->left };
	wire_get_raw(r, b.len);
	return b;
}

bool wire_done(const struct wire_reader *r)
{
	return !r->bad && r->left == 0;
}

bool wire_bytes_eq(struct wire_bytes b, const char *s)
{
	size_t n = strlen(s);
	return b.p && b.len == n && memcmp(b.p, s, n) == 0;
}

void wire_writer_init(struct wire_writer *w, void *buf, size_t cap)
{
	w->p = buf;
	w->cap = cap;
	w->len = 0;
	w->bad = false;
}

/* Room for n more bytes, counted as written; NULL if they do not fit. */
static uint8_t *room(struct wire_writer *w, size_t n)
{
	if (w->bad || n > w->cap - w->len) {
		w->bad = true;
		return NULL;
	}
	uint8_t *q = w->p + w->len;
	w->len += n;
	return q;
}

void wire_put_raw(struct wire_writer *w, const void *p, size_t n)
{
	uint8_t *q = room(w, n);
	if (q && n)
		memcpy(q, p, n);
}

void wire_put_u8(struct wire_writer *w, uint8_t v)
{
	wire_put_raw(w, &v, 1);
}

void wire_put_u32(struct wire_writer *w, uint32_t v)
{
	uint8_t b[4];
	put_be32(b, v);
	wire_put_raw(w, b, 4);
}

void wire_put_u64(struct wire_writer *w, uint64_t v)
{
	wire_put_u32(w, (uint32_t)(v >> 32));
	wire_put_u32(w, (uint32_t)v);
}

uint8_t *wire_put_string_room(struct wire_writer *w, size_t n)
{
	if (n > UINT32_MAX) {
		w->bad = true;
		return NULL;
	}
	wire_put_u32(w, (uint32_t)n);
	return room(w, n);
}

void wire_put_string(struct wire_writer *w, const void *p, size_t n)
{
	uint8_t *q = wire_put_string_room(w, n);
	if (q && n)
		memcpy(q, p, n);
}

void wire_put_cstring(struct wire_writer *w, const char *s)
{
	wire_put_string(w, s, strlen(s));
}

size_t wire_begin_string(struct wire_writer *w)
{
	size_t mark = w->len;
	wire_put_u32(w, 0);
	return mark;
}

void wire_end_string(struct wire_writer *w, size_t mark)
{
	if (w->bad)
		return;
	size_t n = w->len - mark - 4;
	if (n > UINT32_MAX) {
		w->bad = true;
		return;
	}
	put_be32(w->p + mark, (uint32_t)n);
}

uint32_t wire_frame_len(const uint8_t hdr[4], uint32_t max)
{
	uint32_t n = be32(hdr);
	return n > max ? 0 : n;
}

void wire_frame_hdr(uint8_t hdr[4], uint32_t len)
{
	put_be32(hdr, len);
}

/* SPDX-License-Identifier: ISC */
/* The token's frames and their fields: see p11_wire.h. */
#include "p11_wire.h"

#include <string.h>

void p11_reader_init(struct p11_reader *r, const void *p, size_t len)
{
	r->p = p;
	r->len = len;
	r->off = 0;
	r->bad = false;
}

const uint8_t *p11_get_raw(struct p11_reader *r, size_t n)
{
	if (r->bad || n > r->len - r->off) {
		r->bad = true;
		return NULL;
	}
	const uint8_t *q = r->p + r->off;
	r->off += n;
	return q;
}

uint8_t p11_get_u8(struct p11_reader *r)
{
	const uint8_t *q = p11_get_raw(r, 1);
	return q ? q[0] : 0;
}

uint32_t p11_get_u32(struct p11_reader *r)
{
	const uint8_t *q = p11_get_raw(r, 4);
	if (!q)
		return 0;
	return (uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | q[3];
}

uint64_t p11_get_u64(struct p11_reader *r)
{
	uint64_t hi = p11_get_u32(r);
	return hi << 32 | p11_get_u32(r);
}

const uint8_t *p11_get_bytes(struct p11_reader *r, uint32_t *len, uint32_t max)
{
	uint32_t n = p11_get_u32(r);
	if (n > max)
		r->bad = true;
	const uint8_t *q = p11_get_raw(r, n);
	*len = q ? n : 0;
	return q;
}

void p11_get_template(struct p11_reader *r, struct p11_template *t)
{
	t->n = 0;
	uint32_t n = p11_get_u32(r);
	if (n > P11_ATTRS_MAX) {
		r->bad = true;
		return;
	}
	for (uint32_t i = 0; i < n && !r->bad; i++) {
		struct p11_attr *a = &t->a[i];
		a->type = p11_get_u64(r);
		a->value = p11_get_bytes(r, &a->len, P11_ATTR_VALUE_MAX);
		if (!r->bad)
			t->n = i + 1;
	}
}

bool p11_reader_done(const struct p11_reader *r)
{
	return !r->bad && r->off == r->len;
}

void p11_writer_init(struct p11_writer *w, void *p, size_t cap)
{
	w->p = p;
	w->cap = cap;
	w->len = 0;
	w->bad = false;
}

void p11_put_raw(struct p11_writer *w, const void *p, size_t len)
{
	if (w->bad || len > w->cap - w->len) {
		w->bad = true;
		return;
	}
	if (len)
		memcpy(w->p + w->len, p, len);
	w->len += len;
}

void p11_put_u8(struct p11_writer *w, uint8_t v)
{
	p11_put_raw(w, &v, 1);
}

void p11_put_u32(struct p11_writer *w, uint32_t v)
{
	uint8_t b[4] = { (uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v };
	p11_put_raw(w, b, 4);
}

void p11_put_u64(struct p11_writer *w, uint64_t v)
{
	p11_put_u32(w, (uint32_t)(v >> 32));
	p11_put_u32(w, (uint32_t)v);
}

uint8_t *p11_put_bytes_room(struct p11_writer *w, size_t len)
{
	if (len > UINT32_MAX) {
		w->bad = true;
		return NULL;
	}
	p11_put_u32(w, (uint32_t)len);
	if (w->bad || len > w->cap - w->len) {
		w->bad = true;
		return NULL;
	}
	uint8_t *q = w->p + w->len;
	w->len += len;
	return q;
}

void p11_put_bytes(struct p11_writer *w, const void *p, size_t len)
{
	uint8_t *q = p11_put_bytes_room(w, len);
	if (q && len)
		memcpy(q, p, len);
}

void p11_put_template(struct p11_writer *w, const CK_ATTRIBUTE *a, unsigned long n)
{
	if (n > P11_ATTRS_MAX) {
		w->bad = true;
		return;
	}
	p11_put_u32(w, (uint32_t)n);
	for (unsigned long i = 0; i < n; i++) {
		if (a[i].ulValueLen > P11_ATTR_VALUE_MAX || (!a[i].pValue && a[i].ulValueLen)) {
			w->bad = true;
			return;
		}
		p11_put_u64(w, a[i].type);
		p11_put_bytes(w, a[i].pValue, a[i].ulValueLen);
	}
}

uint32_t p11_frame_len(const uint8_t hdr[4])
{
	uint32_t n = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 | (uint32_t)hdr[2] << 8 | hdr[3];
	return n > P11_BODY_MAX ? 0 : n;
}

void p11_frame_hdr(uint8_t hdr[4], uint32_t len)
{
	hdr[0] = (uint8_t)(len >> 24);
	hdr[1] = (uint8_t)(len >> 16);
	hdr[2] = (uint8_t)(len >> 8);
	hdr[3] = (uint8_t)len;
}

void p11_put_request(struct p11_writer *w, enum p11_op op, const uint8_t app[P11_APP_ID])
{
	p11_put_u8(w, P11_VERSION);
	p11_put_u8(w, (uint8_t)op);
	p11_put_raw(w, app, P11_APP_ID);
}

void p11_put_reply(struct p11_writer *w, uint8_t op, CK_RV rv)
{
	p11_put_u8(w, P11_VERSION);
	p11_put_u8(w, op);
	p11_put_u64(w, rv);
}

bool p11_attr_ulong(const struct p11_attr *a, CK_ULONG *v)
{
	if (a->len != sizeof *v)
		return false;
	memcpy(v, a->value, sizeof *v);
	return true;
}

bool p11_attr_bool(const struct p11_attr *a, CK_BBOOL *v)
{
	if (a->len != 1)
		return false;
	*v = a->value[0] != 0; /* any non-zero byte is true, as tokens read it */
	return true;
}

/* SPDX-License-Identifier: ISC */
/* The token's frames and their fields, on services/common's codec
 * (wire.h): see p11_wire.h. */
#include "p11_wire.h"

#include <string.h>

struct wire_bytes p11_get_bytes(struct wire_reader *r, uint32_t max)
{
	uint32_t n = wire_get_u32(r);
	if (n > max)
		r->bad = true;
	const uint8_t *q = wire_get_raw(r, n);
	return (struct wire_bytes){ q, q ? n : 0 };
}

void p11_get_template(struct wire_reader *r, struct p11_template *t)
{
	t->n = 0;
	uint32_t n = wire_get_u32(r);
	if (n > P11_ATTRS_MAX) {
		r->bad = true;
		return;
	}
	for (uint32_t i = 0; i < n && !r->bad; i++) {
		struct p11_attr *a = &t->a[i];
		a->type = wire_get_u64(r);
		struct wire_bytes v = p11_get_bytes(r, P11_ATTR_VALUE_MAX);
		a->value = v.p;
		a->len = (uint32_t)v.len;
		if (!r->bad)
			t->n = i + 1;
	}
}

void p11_put_template(struct wire_writer *w, const CK_ATTRIBUTE *a, unsigned long n)
{
	if (n > P11_ATTRS_MAX) {
		w->bad = true;
		return;
	}
	wire_put_u32(w, (uint32_t)n);
	for (unsigned long i = 0; i < n; i++) {
		if (a[i].ulValueLen > P11_ATTR_VALUE_MAX || (!a[i].pValue && a[i].ulValueLen)) {
			w->bad = true;
			return;
		}
		wire_put_u64(w, a[i].type);
		wire_put_string(w, a[i].pValue, a[i].ulValueLen);
	}
}

uint32_t p11_frame_len(const uint8_t hdr[4])
{
	return wire_frame_len(hdr, P11_BODY_MAX);
}

void p11_put_request(struct wire_writer *w, enum p11_op op, const uint8_t app[P11_APP_ID])
{
	wire_put_u8(w, P11_VERSION);
	wire_put_u8(w, (uint8_t)op);
	wire_put_raw(w, app, P11_APP_ID);
}

void p11_put_reply(struct wire_writer *w, uint8_t op, CK_RV rv)
{
	wire_put_u8(w, P11_VERSION);
	wire_put_u8(w, op);
	wire_put_u64(w, rv);
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

/* SPDX-License-Identifier: ISC */
/* Object storage: see p11_objects.h. */
#include "p11_objects.h"

#include <string.h>

#include "wipe.h"
#include "p11_ossl.h"
#include "p11_wire.h"

void p11_objects_init(struct p11_objects *s)
{
	wipe(s, sizeof *s);
	s->next_handle = 1;
}

struct p11_object *p11_objects_new(struct p11_objects *s, uint64_t session)
{
	for (unsigned i = 0; i < P11_OBJECTS_MAX; i++) {
		struct p11_object *o = &s->o[i];
		if (o->handle)
			continue;
		o->handle = s->next_handle++;
		if (!s->next_handle) /* never 0, never reused before 2^32 */
			s->next_handle = 1;
		o->session = session;
		o->nattr = o->used = 0;
		return o;
	}
	return NULL;
}

struct p11_object *p11_objects_get(struct p11_objects *s, uint64_t handle)
{
	if (!handle)
		return NULL;
	for (unsigned i = 0; i < P11_OBJECTS_MAX; i++)
		if (s->o[i].handle == handle)
			return &s->o[i];
	return NULL;
}

void p11_objects_free(struct p11_object *o)
{
	wipe(o, sizeof *o);
	/* The signing code may keep the last EC and RSA keys' objects
	 * (p11_ossl.c): they go with any object freed, this one's or not. */
	p11_ossl_forget();
}

static struct p11_obj_attr *find(const struct p11_object *o, uint64_t type)
{
	for (uint32_t i = 0; i < o->nattr; i++)
		if (o->attr[i].type == type)
			return (struct p11_obj_attr *)&o->attr[i];
	return NULL;
}

const uint8_t *p11_obj_attr(const struct p11_object *o, uint64_t type, uint32_t *len)
{
	const struct p11_obj_attr *a = find(o, type);
	if (!a)
		return NULL;
	*len = a->len;
	return o->data + a->off;
}

/* Removes attribute a: the arena is compacted and its freed tail wiped. */
static void remove_attr(struct p11_object *o, struct p11_obj_attr *a)
{
	uint32_t off = a->off, len = a->len;
	memmove(o->data + off, o->data + off + len, o->used - off - len);
	o->used -= len;
	wipe(o->data + o->used, len);
	for (uint32_t i = 0; i < o->nattr; i++)
		if (o->attr[i].off > off)
			o->attr[i].off -= len;
	*a = o->attr[--o->nattr];
	wipe(&o->attr[o->nattr], sizeof o->attr[0]);
}

bool p11_obj_set(struct p11_object *o, uint64_t type, const void *value, uint32_t len)
{
	struct p11_obj_attr *old = find(o, type);
	uint32_t room = P11_OBJ_DATA - o->used + (old ? old->len : 0);
	if (len > room || (!old && o->nattr == P11_OBJ_ATTRS))
		return false;
	if (old)
		remove_attr(o, old);
	struct p11_obj_attr *a = &o->attr[o->nattr++];
	a->type = type;
	a->off = o->used;
	a->len = len;
	if (len)
		memcpy(o->data + o->used, value, len);
	o->used += len;
	return true;
}

unsigned long p11_obj_ulong(const struct p11_object *o, uint64_t type, unsigned long dflt)
{
	uint32_t len;
	const uint8_t *v = p11_obj_attr(o, type, &len);
	unsigned long x;
	if (!v || len != sizeof x)
		return dflt;
	memcpy(&x, v, sizeof x);
	return x;
}

bool p11_obj_bool(const struct p11_object *o, uint64_t type, bool dflt)
{
	uint32_t len;
	const uint8_t *v = p11_obj_attr(o, type, &len);
	return v && len == 1 ? v[0] != 0 : dflt;
}

/* Blob: "CKTO" u32 version=1, u32 count, count x (u32 handle, template of
 * the object's attributes, as p11_get_template reads it); then u32
 * next_handle. */
#define BLOB_MAGIC 0x434b544fu

size_t p11_objects_save(const struct p11_objects *s, uint8_t *blob, size_t cap)
{
	struct wire_writer w;
	wire_writer_init(&w, blob, cap);
	uint32_t n = 0;
	for (unsigned i = 0; i < P11_OBJECTS_MAX; i++)
		n += s->o[i].handle && !s->o[i].session;
	wire_put_u32(&w, BLOB_MAGIC);
	wire_put_u32(&w, 1);
	wire_put_u32(&w, n);
	for (unsigned i = 0; i < P11_OBJECTS_MAX; i++) {
		const struct p11_object *o = &s->o[i];
		if (!o->handle || o->session)
			continue;
		wire_put_u32(&w, o->handle);
		wire_put_u32(&w, o->nattr);
		for (uint32_t j = 0; j < o->nattr; j++) {
			wire_put_u64(&w, o->attr[j].type);
			wire_put_string(&w, o->data + o->attr[j].off, o->attr[j].len);
		}
	}
	wire_put_u32(&w, s->next_handle);
	if (w.bad) {
		wipe(blob, w.len);
		return 0;
	}
	return w.len;
}

bool p11_objects_load(struct p11_objects *s, const uint8_t *blob, size_t len)
{
	struct wire_reader r;
	wire_reader_init(&r, blob, len);
	p11_objects_init(s);
	uint32_t magic = wire_get_u32(&r), version = wire_get_u32(&r), n = wire_get_u32(&r);
	if (magic != BLOB_MAGIC || version != 1 || n > P11_OBJECTS_MAX)
		r.bad = true;
	for (uint32_t i = 0; i < n && !r.bad; i++) {
		struct p11_object *o = &s->o[i];
		o->handle = wire_get_u32(&r);
		struct p11_template t;
		p11_get_template(&r, &t);
		if (!o->handle || p11_objects_get(s, o->handle) != o || t.n > P11_OBJ_ATTRS)
			r.bad = true;
		for (uint32_t j = 0; j < t.n && !r.bad; j++)
			if (find(o, t.a[j].type) || !p11_obj_set(o, t.a[j].type, t.a[j].value, t.a[j].len))
				r.bad = true;
	}
	s->next_handle = wire_get_u32(&r);
	for (uint32_t i = 0; i < P11_OBJECTS_MAX; i++)
		if (s->o[i].handle >= s->next_handle)
			r.bad = true; /* a handle the next object could take again */
	if (!wire_done(&r) || !s->next_handle) {
		p11_objects_init(s);
		return false;
	}
	return true;
}

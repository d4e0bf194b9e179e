/* SPDX-License-Identifier: ISC */
/*
 * The token's objects in guest memory: each object is a list of
 * attributes whose values sit in the object's own arena, private key
 * values among them. Policy (who may see, read or change what) is the
 * token's (p11_token.c); this module only stores, and wipes whatever it
 * lets go of: a freed object, an attribute's old value.
 *
 * The token objects serialise to one opaque byte blob and back
 * (p11_objects_save / p11_objects_load): that blob is what a persistent
 * store will keep, encrypted, on a cloak block device.
 */
#ifndef P11_OBJECTS_H
#define P11_OBJECTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "p11_wire.h"

#define P11_OBJECTS_MAX 64
#define P11_OBJ_ATTRS P11_ATTRS_MAX
#define P11_OBJ_DATA (20 * 1024)

struct p11_obj_attr {
	uint64_t type;
	uint32_t off, len;
};

struct p11_object {
	uint32_t handle;  /* 0: a free slot */
	uint64_t session; /* 0: a token object; else the session that owns it */
	uint32_t nattr, used;
	struct p11_obj_attr attr[P11_OBJ_ATTRS];
	uint8_t data[P11_OBJ_DATA];
};

struct p11_objects {
	struct p11_object o[P11_OBJECTS_MAX];
	uint32_t next_handle;
};

void p11_objects_init(struct p11_objects *s);
/* A new empty object (handle assigned), or NULL if all slots are used. */
struct p11_object *p11_objects_new(struct p11_objects *s, uint64_t session);
/* The object with this handle, or NULL. */
struct p11_object *p11_objects_get(struct p11_objects *s, uint64_t handle);
/* Frees and wipes the object. */
void p11_objects_free(struct p11_object *o);

/* The attribute's value (and *len), or NULL if the object has none. */
const uint8_t *p11_obj_attr(const struct p11_object *o, uint64_t type, uint32_t *len);
/* Sets (adds or replaces) an attribute; false if the object is full,
 * and then the object is unchanged. */
bool p11_obj_set(struct p11_object *o, uint64_t type, const void *value, uint32_t len);
/* A CK_ULONG or CK_BBOOL attribute, or dflt if absent or malformed. */
unsigned long p11_obj_ulong(const struct p11_object *o, uint64_t type, unsigned long dflt);
bool p11_obj_bool(const struct p11_object *o, uint64_t type, bool dflt);

/* Token objects (session 0) to a blob: its length, or 0 if cap is too
 * small. The blob holds private values: the caller encrypts or wipes it. */
size_t p11_objects_save(const struct p11_objects *s, uint8_t *blob, size_t cap);
/* Replaces all objects by the blob's; false (and no objects) if it is
 * malformed. */
bool p11_objects_load(struct p11_objects *s, const uint8_t *blob, size_t len);

#endif

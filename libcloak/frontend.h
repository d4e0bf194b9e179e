/* SPDX-License-Identifier: ISC */
/*
 * What the front ends (sodium.c, openssl.c) use beyond the public API, from
 * api.c and lifecycle.c. Not exported.
 */
#ifndef CLOAK_LIBCLOAK_FRONTEND_H
#define CLOAK_LIBCLOAK_FRONTEND_H

#include "core.h"
#include "lifecycle.h"

/* cloak_secret_alloc with the header's mark set if `mark`. */
void *frontend_alloc(size_t size, bool mark) CLOAK_HIDDEN;
/* p lies in libcloak's memory (a live secret, or a misuse cloak_secret_free
 * reports); lock-free. */
bool frontend_owns(const void *p) CLOAK_HIDDEN;
/* The mark of a live secret. */
bool frontend_marked(const void *p) CLOAK_HIDDEN;
/* The size a request of `size` bytes is served with (its size class, or a
 * multiple of 16): asking for that much wastes nothing. */
size_t frontend_round_size(size_t size) CLOAK_HIDDEN;

#endif

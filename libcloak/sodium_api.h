/* SPDX-License-Identifier: ISC */
/*
 * The part of libsodium's API that libcloak-sodium.so provides (its
 * guarded-heap functions), declared once for the front end and its tests.
 * Programs written for libsodium keep including <sodium.h>.
 */
#ifndef CLOAK_SODIUM_API_H
#define CLOAK_SODIUM_API_H

#include <stddef.h>

void *sodium_malloc(size_t size);
void *sodium_allocarray(size_t count, size_t size);
void sodium_free(void *ptr);
int sodium_mprotect_noaccess(void *ptr);
int sodium_mprotect_readonly(void *ptr);
int sodium_mprotect_readwrite(void *ptr);

#endif

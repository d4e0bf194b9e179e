/* SPDX-License-Identifier: ISC */
/*
 * <stdlib.h> for cloak guests. The heap must be set up with
 * cloak_heap_init() (<cloak/heap.h>) before the first allocation; the
 * runtime's start-up code does that.
 */
#ifndef CLOAK_RT_STDLIB_H
#define CLOAK_RT_STDLIB_H

#include <stddef.h>

#ifndef EXIT_SUCCESS
#define EXIT_SUCCESS 0
#endif
#ifndef EXIT_FAILURE
#define EXIT_FAILURE 1
#endif

/* Every block is 16-byte aligned. malloc(0) returns a unique block;
 * realloc(p, 0) frees p and returns NULL; calloc returns NULL when
 * nmemb * size overflows. Failures return NULL and set errno to ENOMEM. */
void *malloc(size_t size);
void free(void *ptr);
void *calloc(size_t nmemb, size_t size);
void *realloc(void *ptr, size_t size);
/* alignment: a power of two; size need not be a multiple of it. */
void *aligned_alloc(size_t alignment, size_t size);
/* Returns 0, EINVAL (alignment not a power of two multiple of
 * sizeof(void *)) or ENOMEM. */
int posix_memalign(void **memptr, size_t alignment, size_t size);

/* Implemented by the runtime's exit module. */
_Noreturn void abort(void);
_Noreturn void exit(int status);

/* Base 0 and 2..36, optional sign, "0x" prefix for base 16 (and 0);
 * overflow clamps and sets errno to ERANGE; no digits: returns 0 and sets
 * *end to s. */
long strtol(const char *restrict s, char **restrict end, int base);
unsigned long strtoul(const char *restrict s, char **restrict end, int base);
long long strtoll(const char *restrict s, char **restrict end, int base);
unsigned long long strtoull(const char *restrict s, char **restrict end, int base);
int atoi(const char *s);
long atol(const char *s);

#endif

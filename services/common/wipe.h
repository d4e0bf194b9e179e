/* SPDX-License-Identifier: ISC */
/* Wiping memory that held key material, in a way the compiler cannot
 * drop as a dead store: the empty asm claims to read the zeroed bytes.
 * Both key services use it, in their guests and in the host builds of
 * their modules. */
#ifndef SERVICES_WIPE_H
#define SERVICES_WIPE_H

#include <stddef.h>
#include <string.h>

static inline void wipe(void *p, size_t n)
{
	if (!n)
		return;
	memset(p, 0, n);
	__asm__ volatile("" : : "r"(p) : "memory");
}

/* Guest only (wipe.c), after each request: */
/* Zeroes the 32 KiB of stack below the caller's frame, where the request's
 * handler and the libraries it called (BearSSL, Nettle, GMP, libsodium,
 * Mbed TLS) kept their temporaries; their deepest use is a few KiB. */
void wipe_stack(void);
/* Zeroes the first n bytes of the bounce pool, which a channel read or
 * write copies its bytes through (at most the pool's size per call): the
 * monitor can see those pages. */
void wipe_bounce(size_t n);

#endif

/* SPDX-License-Identifier: ISC */
/* Wiping memory that held key material, in a way the compiler cannot
 * drop as a dead store: the empty asm claims to read the zeroed bytes. */
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

#endif

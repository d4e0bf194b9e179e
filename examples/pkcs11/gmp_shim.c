/* SPDX-License-Identifier: ISC */
/*
 * What Debian's libgmp.a, under Nettle's ECDSA (p11_ec.c), calls outside
 * itself, for the guest: its allocation-failure and assertion messages
 * print to stderr. The token's signatures run on fixed-size limbs with
 * scratch space of its own and never reach those paths: abort if one
 * ever does. The host links the real ones.
 */
#include <stdlib.h>

/* GMP only passes it to __fprintf_chk below. */
void *stderr;
void *stderr = NULL;

int __fprintf_chk(void *stream, int flag, const char *fmt, ...);
int __fprintf_chk(void *stream, int flag, const char *fmt, ...)
{
	(void)stream;
	(void)flag;
	(void)fmt;
	abort();
}

/* SPDX-License-Identifier: ISC */
/*
 * libcloak-sodium.so: libsodium's guarded-heap API on memfd_secret memory,
 * for programs that link it instead of libsodium's copies, or preload it.
 * Semantics kept from libsodium's documentation and tests: each allocation
 * sits between guard pages with its end at a page end (a one-byte overflow
 * faults), the 16 bytes before it are checked on free and damage ends the
 * process with SIGSEGV (libsodium's programs catch exactly that), new memory
 * is filled with 0xdb, size 0 works, an overflowing sodium_allocarray
 * returns NULL with ENOMEM, contents survive noaccess/readonly/readwrite
 * changes, and sodium_free accepts memory in any protection state. A forked
 * child keeps a copy of every secret, as it keeps libsodium's memory.
 */
#include "frontend.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#define GARBAGE_BYTE 0xdb

__attribute__((constructor)) static void sodium_front_end_start(void)
{
	CFG_STORE(misuse_signal, SIGSEGV);
	lifecycle_default_fork_mode(CLOAK_SECRET_FORK_COPY);
	cloak_init(); /* the fork handlers, before the program can fork */
}

/* The front end's API is what this library exports (see its .map). */
#pragma GCC visibility push(default)

#include "sodium_api.h"

/* Programs written for libsodium do not know cloak_secret_last_error(): say
 * once on stderr why secret memory could not be had. */
static void report_failure(void)
{
	static int reported;
	if (!__atomic_exchange_n(&reported, 1, __ATOMIC_RELAXED))
		fprintf(stderr, "libcloak-sodium: sodium_malloc failed: %s\n", cloak_secret_last_error());
}

void *sodium_malloc(size_t size)
{
	void *p = cloak_secret_alloc_guarded(size);
	if (!p) {
		if (size <= SIZE_MAX / 4)
			report_failure();
		errno = ENOMEM;
		return NULL;
	}
	memset(p, GARBAGE_BYTE, size);
	return p;
}

void *sodium_allocarray(size_t count, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(count, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return sodium_malloc(total);
}

void sodium_free(void *ptr)
{
	cloak_secret_free(ptr);
}

int sodium_mprotect_noaccess(void *ptr)
{
	return cloak_secret_protect(ptr, CLOAK_SECRET_NOACCESS);
}

int sodium_mprotect_readonly(void *ptr)
{
	return cloak_secret_protect(ptr, CLOAK_SECRET_READONLY);
}

int sodium_mprotect_readwrite(void *ptr)
{
	return cloak_secret_protect(ptr, CLOAK_SECRET_READWRITE);
}

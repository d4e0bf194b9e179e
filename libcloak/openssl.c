/*
 * libcloak-openssl.so: an LD_PRELOAD library that puts OpenSSL 3's secure heap
 * (the CRYPTO_secure_malloc family, where private keys' BIGNUMs live) into
 * memfd_secret memory. With CLOAK_OPENSSL_ALL=1 every OPENSSL_malloc goes
 * there too. libcrypto calls these functions through its PLT, so the
 * preload's definitions (same names, same OPENSSL_3.0.0 version; see
 * openssl.map) replace libcrypto's own. Pointers that libcloak did not hand
 * out are passed on to libcrypto's functions.
 */
#include "internal.h"

#include <dlfcn.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OPENSSL_VERSION_NODE "OPENSSL_3.0.0"

/* The front end's API is what this library exports (see its .map). */
#pragma GCC visibility push(default)

static bool all_mode(void)
{
	static int cached = -1;
	int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
	if (v < 0) {
		const char *e = getenv("CLOAK_OPENSSL_ALL");
		v = e && !strcmp(e, "1");
		__atomic_store_n(&cached, v, __ATOMIC_RELAXED);
	}
	return v;
}

static bool owned(const void *p)
{
	return p && (pool_owns(p) || mapped_owns(p));
}

static void *next_symbol(const char *name)
{
	void *f = dlvsym(RTLD_NEXT, name, OPENSSL_VERSION_NODE);
	if (!f)
		f = dlsym(RTLD_NEXT, name);
	if (!f)
		cloak_die("libcloak-openssl: %s not found in libcrypto; is this OpenSSL 3?", name);
	return f;
}
/* Resolves libcrypto's own function once (racing threads store the same
 * value). */
#define NEXT(type, name)                                                      \
	static type next_cache;                                               \
	type next_fn = __atomic_load_n(&next_cache, __ATOMIC_RELAXED);        \
	if (!next_fn) {                                                       \
		next_fn = (type)next_symbol(#name);                           \
		__atomic_store_n(&next_cache, next_fn, __ATOMIC_RELAXED);     \
	}

/* OpenSSL gets NULL on failure; tell the person running it why, once. */
static void *checked(void *p, size_t num)
{
	static int reported;
	if (!p && !__atomic_exchange_n(&reported, 1, __ATOMIC_RELAXED))
		fprintf(stderr, "libcloak-openssl: cannot allocate %zu bytes of secret memory: %s\n",
		        num, cloak_secret_last_error());
	return p;
}

void *CRYPTO_secure_malloc(size_t num, const char *file, int line)
{
	return checked(cloak_secret_alloc(num), num);
}

void *CRYPTO_secure_zalloc(size_t num, const char *file, int line)
{
	return checked(cloak_secret_alloc(num), num); /* already zeroed */
}

void CRYPTO_secure_free(void *ptr, const char *file, int line)
{
	typedef void (*fn)(void *, const char *, int);
	if (!ptr)
		return;
	if (owned(ptr)) {
		cloak_secret_free(ptr);
		return;
	}
	NEXT(fn, CRYPTO_secure_free);
	next_fn(ptr, file, line);
}

void CRYPTO_secure_clear_free(void *ptr, size_t num, const char *file, int line)
{
	typedef void (*fn)(void *, size_t, const char *, int);
	if (!ptr)
		return;
	if (owned(ptr)) {
		cloak_secret_free(ptr); /* zeroes */
		return;
	}
	NEXT(fn, CRYPTO_secure_clear_free);
	next_fn(ptr, num, file, line);
}

int CRYPTO_secure_allocated(const void *ptr)
{
	return owned(ptr);
}

/* Secret memory grows on demand: there is no fixed heap to set up. */
int CRYPTO_secure_malloc_init(size_t size, size_t minsize)
{
	return 1;
}

int CRYPTO_secure_malloc_initialized(void)
{
	return 1;
}

int CRYPTO_secure_malloc_done(void)
{
	return 1;
}

size_t CRYPTO_secure_actual_size(void *ptr)
{
	return owned(ptr) ? cloak_secret_usable_size(ptr) : 0;
}

size_t CRYPTO_secure_used(void)
{
	struct cloak_secret_stats s;
	cloak_secret_stats(&s);
	return (size_t)s.bytes_in_use;
}

/* ---- every OPENSSL_malloc, with CLOAK_OPENSSL_ALL=1 ---- */

void *CRYPTO_malloc(size_t num, const char *file, int line)
{
	typedef void *(*fn)(size_t, const char *, int);
	if (all_mode())
		return checked(cloak_secret_alloc(num), num);
	NEXT(fn, CRYPTO_malloc);
	return next_fn(num, file, line);
}

void *CRYPTO_zalloc(size_t num, const char *file, int line)
{
	typedef void *(*fn)(size_t, const char *, int);
	if (all_mode())
		return checked(cloak_secret_alloc(num), num);
	NEXT(fn, CRYPTO_zalloc);
	return next_fn(num, file, line);
}

void *CRYPTO_realloc(void *ptr, size_t num, const char *file, int line)
{
	typedef void *(*fn)(void *, size_t, const char *, int);
	if (owned(ptr) || (!ptr && all_mode())) {
		if (num == 0) { /* OpenSSL's realloc to 0 frees and returns NULL */
			cloak_secret_free(ptr);
			return NULL;
		}
		return checked(cloak_secret_realloc(ptr, num), num);
	}
	NEXT(fn, CRYPTO_realloc);
	return next_fn(ptr, num, file, line);
}

void *CRYPTO_clear_realloc(void *ptr, size_t old_len, size_t num, const char *file, int line)
{
	typedef void *(*fn)(void *, size_t, size_t, const char *, int);
	if (owned(ptr) || (!ptr && all_mode())) {
		if (num == 0) {
			cloak_secret_free(ptr);
			return NULL;
		}
		return checked(cloak_secret_realloc(ptr, num), num);
	}
	NEXT(fn, CRYPTO_clear_realloc);
	return next_fn(ptr, old_len, num, file, line);
}

void CRYPTO_free(void *ptr, const char *file, int line)
{
	typedef void (*fn)(void *, const char *, int);
	if (owned(ptr)) {
		cloak_secret_free(ptr);
		return;
	}
	NEXT(fn, CRYPTO_free);
	next_fn(ptr, file, line);
}

void CRYPTO_clear_free(void *ptr, size_t num, const char *file, int line)
{
	typedef void (*fn)(void *, size_t, const char *, int);
	if (owned(ptr)) {
		cloak_secret_free(ptr);
		return;
	}
	NEXT(fn, CRYPTO_clear_free);
	next_fn(ptr, num, file, line);
}

/* SPDX-License-Identifier: ISC */
/*
 * libcloak-openssl.so: an LD_PRELOAD library that puts OpenSSL 3's secret
 * numbers into memfd_secret memory. libcrypto calls its allocation functions
 * through its PLT, so the preload's definitions (same names, same
 * OPENSSL_3.0.0 version; see openssl.map) replace libcrypto's own, whether
 * libcrypto was linked in or loaded later with dlopen, RTLD_LOCAL included
 * (the preload is in the global scope every object's lookups search first).
 * Three modes (CLOAK_OPENSSL):
 *   secure  the secure heap (CRYPTO_secure_malloc and friends), where
 *           OpenSSL keeps private keys' BIGNUMs;
 *   bignum  (the default) also every allocation OpenSSL's BIGNUM code makes
 *           (its source files under crypto/bn/), so that the working copies
 *           of key numbers (Montgomery contexts of RSA's p and q,
 *           exponentiation buffers) are secret too;
 *   all     every OPENSSL_malloc (also CLOAK_OPENSSL_ALL=1).
 * Pointers libcloak did not hand out go to libcrypto's own functions, but are
 * zeroed first when libcrypto's allocator is malloc (its default): the
 * buffers in which OpenSSL decodes a key file hold the key's numbers
 * big-endian, and a pre-forking server's workers would otherwise inherit
 * them, freed but intact, from the master's heap.
 */
#include "env.h"
#include "frontend.h"

#include <dlfcn.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OPENSSL_VERSION_NODE "OPENSSL_3.0.0"

enum mode { MODE_SECURE, MODE_BIGNUM, MODE_ALL };
_Static_assert(MODE_SECURE == 0 && MODE_BIGNUM == 1 && MODE_ALL == 2,
               "the modes in the order of CLOAK_OPENSSL's values in env.c");
static enum mode mode = MODE_BIGNUM;

__attribute__((constructor)) static void openssl_front_end_start(void)
{
	mode = (enum mode)env_choice(ENV_OPENSSL, MODE_BIGNUM);
	if (env_choice(ENV_OPENSSL_ALL, 0) == 1)
		mode = MODE_ALL;
	lifecycle_default_fork_mode(CLOAK_SECRET_FORK_COPY);
	cloak_init(); /* the fork handlers, before the program can fork */
}

/* The front end's API is what this library exports (see its .map). */
#pragma GCC visibility push(default)

#include <openssl/crypto.h>

static bool owned(const void *p)
{
	return p && frontend_owns(p);
}

/* libcrypto's own definition of `name`. Found through RTLD_NEXT when
 * libcrypto is in the global scope; otherwise (loaded with RTLD_LOCAL)
 * through the object that called us, which is libcrypto or an object linked
 * against it, so its own scope finds libcrypto; then by libcrypto's soname.
 * Never our own definition (`self`). */
static void *next_symbol(const char *name, const void *caller, const void *self)
{
	void *f = dlvsym(RTLD_NEXT, name, OPENSSL_VERSION_NODE);
	Dl_info di;
	if ((!f || f == self) && caller && dladdr(caller, &di) && di.dli_fname && di.dli_fname[0]) {
		void *h = dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
		f = h ? dlvsym(h, name, OPENSSL_VERSION_NODE) : NULL;
		if (h)
			dlclose(h);
	}
	if (!f || f == self) {
		void *h = dlopen("libcrypto.so.3", RTLD_LAZY | RTLD_NOLOAD);
		f = h ? dlvsym(h, name, OPENSSL_VERSION_NODE) : NULL;
		if (h)
			dlclose(h);
	}
	if (!f || f == self)
		cloak_die("libcloak-openssl: %s not found in libcrypto; is this OpenSSL 3?", name);
	return f;
}

/* Resolves libcrypto's own function once (racing threads store the same
 * value). */
#define NEXT(type, name)                                                                   \
	static type next_cache;                                                            \
	type next_fn = __atomic_load_n(&next_cache, __ATOMIC_ACQUIRE);                     \
	if (!next_fn) {                                                                    \
		next_fn = (type)next_symbol(#name, __builtin_return_address(0), (void *)name); \
		__atomic_store_n(&next_cache, next_fn, __ATOMIC_RELEASE);                  \
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

/* Whether an OPENSSL_malloc from source file `file` goes to secret memory.
 * libcrypto passes each call site's file name (one string per file, so the
 * answer is cached by its address). */
static bool bignum_file(const char *file)
{
	enum { SLOTS = 64 };
	static const char *seen[SLOTS];
	static bool verdict[SLOTS];
	static int warned;
	if (!file)
		return false;
	size_t i = ((uintptr_t)file >> 3) % SLOTS;
	if (__atomic_load_n(&seen[i], __ATOMIC_ACQUIRE) == file)
		return __atomic_load_n(&verdict[i], __ATOMIC_RELAXED);
	if (!file[0] && !__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
		fprintf(stderr, "libcloak-openssl: this libcrypto passes no source file names, so "
		        "BIGNUM working copies stay in ordinary memory; use CLOAK_OPENSSL=all\n");
	bool v = strstr(file, "crypto/bn/") != NULL;
	/* A racing thread may fill the slot with another file: both are right
	 * for their own address, and a verdict is stored before its address. */
	__atomic_store_n(&seen[i], NULL, __ATOMIC_RELEASE);
	__atomic_store_n(&verdict[i], v, __ATOMIC_RELAXED);
	__atomic_store_n(&seen[i], file, __ATOMIC_RELEASE);
	return v;
}

static bool wanted(const char *file)
{
	return mode == MODE_ALL || (mode == MODE_BIGNUM && bignum_file(file));
}

/* ---- the secure heap ---- */

/* The size given to CRYPTO_secure_malloc_init, if it was called: OpenSSL's
 * secure heap is that large and no larger, so libcloak refuses allocations
 * past it too. Without it, secret memory grows on demand. */
static size_t secure_limit;
static int secure_initialized;
static size_t secure_used;

void *CRYPTO_secure_malloc(size_t num, const char *file, int line)
{
	if (num == 0)
		return NULL;
	/* Asked for the whole slot, so CRYPTO_secure_actual_size can say how
	 * much is usable, as OpenSSL's does. */
	size_t n = frontend_round_size(num);
	size_t limit = __atomic_load_n(&secure_limit, __ATOMIC_RELAXED);
	size_t used = __atomic_add_fetch(&secure_used, n, __ATOMIC_RELAXED);
	if (limit && used > limit) {
		__atomic_sub_fetch(&secure_used, n, __ATOMIC_RELAXED);
		return NULL;
	}
	void *p = checked(frontend_alloc(n, true), num);
	if (!p)
		__atomic_sub_fetch(&secure_used, n, __ATOMIC_RELAXED);
	return p;
}

void *CRYPTO_secure_zalloc(size_t num, const char *file, int line)
{
	return CRYPTO_secure_malloc(num, file, line); /* secrets come back zeroed */
}

/* A secure-heap allocation or, as in OpenSSL, any other pointer. */
static void secure_release(void *ptr)
{
	if (frontend_marked(ptr))
		__atomic_sub_fetch(&secure_used, cloak_secret_usable_size(ptr), __ATOMIC_RELAXED);
	cloak_secret_free(ptr);
}

void CRYPTO_secure_free(void *ptr, const char *file, int line)
{
	typedef void (*fn)(void *, const char *, int);
	if (!ptr)
		return;
	if (owned(ptr)) {
		secure_release(ptr);
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
		secure_release(ptr); /* zeroes */
		return;
	}
	NEXT(fn, CRYPTO_secure_clear_free);
	next_fn(ptr, num, file, line);
}

int CRYPTO_secure_allocated(const void *ptr)
{
	return owned(ptr) && frontend_marked(ptr);
}

/* OpenSSL's rules: size a power of two, minsize a power of two (or small),
 * only once until CRYPTO_secure_malloc_done. */
int CRYPTO_secure_malloc_init(size_t size, size_t minsize)
{
	if (!size || (size & (size - 1)) || (minsize > 16 && (minsize & (minsize - 1))))
		return 0;
	struct cloak_secret_info info;
	cloak_secret_info(&info);
	if (info.backend == CLOAK_SECRET_BACKEND_NONE)
		return 0;
	if (__atomic_exchange_n(&secure_initialized, 1, __ATOMIC_ACQ_REL))
		return 0;
	__atomic_store_n(&secure_limit, size, __ATOMIC_RELAXED);
	return 1;
}

/* Secret memory is there whether or not the program set up a heap. */
int CRYPTO_secure_malloc_initialized(void)
{
	struct cloak_secret_info info;
	cloak_secret_info(&info);
	return info.backend != CLOAK_SECRET_BACKEND_NONE;
}

int CRYPTO_secure_malloc_done(void)
{
	if (__atomic_load_n(&secure_used, __ATOMIC_RELAXED))
		return 0;
	__atomic_store_n(&secure_limit, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&secure_initialized, 0, __ATOMIC_RELEASE);
	return 1;
}

size_t CRYPTO_secure_actual_size(void *ptr)
{
	return CRYPTO_secure_allocated(ptr) ? cloak_secret_usable_size(ptr) : 0;
}

size_t CRYPTO_secure_used(void)
{
	return __atomic_load_n(&secure_used, __ATOMIC_RELAXED);
}

/* ---- OPENSSL_malloc: BIGNUM code's (bignum mode) or all (all mode) ---- */

void *CRYPTO_malloc(size_t num, const char *file, int line)
{
	typedef void *(*fn)(size_t, const char *, int);
	if (wanted(file))
		return num ? checked(frontend_alloc(num, false), num) : NULL;
	NEXT(fn, CRYPTO_malloc);
	return next_fn(num, file, line);
}

void *CRYPTO_zalloc(size_t num, const char *file, int line)
{
	typedef void *(*fn)(size_t, const char *, int);
	if (wanted(file))
		return num ? checked(frontend_alloc(num, false), num) : NULL;
	NEXT(fn, CRYPTO_zalloc);
	return next_fn(num, file, line);
}

/* A secret stays secret when it grows; OpenSSL's realloc to 0 frees. */
static void *secret_realloc(void *ptr, size_t num)
{
	if (num == 0) {
		cloak_secret_free(ptr);
		return NULL;
	}
	return checked(cloak_secret_realloc(ptr, num), num);
}

/* Whether libcrypto's ordinary allocations come from malloc, so that
 * malloc_usable_size() tells how much of one to zero before it is freed. A
 * program may give OpenSSL other functions (CRYPTO_set_mem_functions), but
 * only before its first allocation; a pointer reaches the functions below
 * only after one, so the answer is asked once. */
static bool libcrypto_uses_malloc(const void *caller)
{
	typedef void (*get_fn)(CRYPTO_malloc_fn *, CRYPTO_realloc_fn *, CRYPTO_free_fn *);
	static int known; /* 0 not asked yet, 1 malloc, 2 the program's own */
	int k = __atomic_load_n(&known, __ATOMIC_ACQUIRE);
	if (!k) {
		get_fn get = (get_fn)next_symbol("CRYPTO_get_mem_functions", caller, NULL);
		CRYPTO_malloc_fn m;
		CRYPTO_realloc_fn r;
		CRYPTO_free_fn f;
		get(&m, &r, &f);
		/* libcrypto's default is its own CRYPTO_free, which resolves to
		 * ours (the preload comes first in every lookup). */
		k = f == CRYPTO_free || f == next_symbol("CRYPTO_free", caller, (void *)CRYPTO_free) ? 1 : 2;
		__atomic_store_n(&known, k, __ATOMIC_RELEASE);
	}
	return k == 1;
}

/* Zeroes an ordinary OpenSSL allocation about to be freed (see the top). */
static void cleanse_ordinary(void *ptr, const void *caller)
{
	if (ptr && libcrypto_uses_malloc(caller))
		explicit_bzero(ptr, malloc_usable_size(ptr));
}

void *CRYPTO_realloc(void *ptr, size_t num, const char *file, int line)
{
	typedef void *(*fn)(void *, size_t, const char *, int);
	if (owned(ptr) || (!ptr && wanted(file)))
		return secret_realloc(ptr, num);
	if (ptr && libcrypto_uses_malloc(__builtin_return_address(0))) {
		/* A block that must grow is moved by hand, so the old one is
		 * zeroed before it is freed (BUF_MEM grows the decoded key file
		 * this way); one that still fits stays where it is, and its
		 * whole usable size is zeroed when it is freed. */
		if (num == 0) {
			CRYPTO_free(ptr, file, line);
			return NULL;
		}
		size_t old = malloc_usable_size(ptr);
		if (num <= old)
			return ptr;
		void *n = CRYPTO_malloc(num, file, line);
		if (!n)
			return NULL;
		memcpy(n, ptr, old);
		CRYPTO_free(ptr, file, line);
		return n;
	}
	NEXT(fn, CRYPTO_realloc);
	return next_fn(ptr, num, file, line);
}

void *CRYPTO_clear_realloc(void *ptr, size_t old_len, size_t num, const char *file, int line)
{
	typedef void *(*fn)(void *, size_t, size_t, const char *, int);
	if (owned(ptr) || (!ptr && wanted(file)))
		return secret_realloc(ptr, num);
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
	cleanse_ordinary(ptr, __builtin_return_address(0));
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

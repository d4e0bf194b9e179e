/*
 * The public allocation entry points: pooled slots for sizes up to 64 KiB,
 * guarded mappings above that, for cloak_secret_alloc_guarded() and for
 * everything in guard-all debug mode.
 */
#include "internal.h"

#include <errno.h>
#include <string.h>

static inline bool guard_all(void)
{
	return __atomic_load_n(&cloak_cfg.debug, __ATOMIC_RELAXED) & CLOAK_DEBUG_GUARD_ALL;
}

void *cloak_secret_alloc(size_t size)
{
	cloak_init();
	if (CLOAK_LIKELY(size <= POOL_MAX_SIZE) && !guard_all())
		return pool_alloc(size);
	return mapped_alloc(size, 16);
}

void *cloak_secret_calloc(size_t count, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(count, size, &total)) {
		set_last_error("cloak_secret_calloc(%zu, %zu): the size overflows", count, size);
		errno = ENOMEM;
		return NULL;
	}
	return cloak_secret_alloc(total); /* secrets always come back zeroed */
}

void *cloak_secret_alloc_guarded(size_t size)
{
	cloak_init();
	return mapped_alloc(size, 1);
}

static _Noreturn void foreign_pointer(const char *op, const void *p)
{
	cloak_die("%s(%p): not a live libcloak allocation (a double free of a guarded or large "
	          "secret, or a pointer from another allocator)", op, p);
}

void cloak_secret_free(void *p)
{
	if (!p)
		return;
	if (pool_owns(p))
		pool_free(p);
	else if (!mapped_free(p))
		foreign_pointer("cloak_secret_free", p);
}

size_t cloak_secret_usable_size(const void *p)
{
	if (!p)
		return 0;
	if (pool_owns(p))
		return pool_size(p);
	size_t size = mapped_size(p);
	if (size == SIZE_MAX)
		foreign_pointer("cloak_secret_usable_size", p);
	return size;
}

void *cloak_secret_realloc(void *p, size_t size)
{
	if (!p)
		return cloak_secret_alloc(size);
	size_t old;
	if (pool_owns(p)) {
		if (!guard_all() && pool_resize(p, size))
			return p;
		old = pool_size(p);
	} else {
		old = mapped_size(p);
		if (old == SIZE_MAX)
			foreign_pointer("cloak_secret_realloc", p);
	}
	void *n = cloak_secret_alloc(size);
	if (!n)
		return NULL; /* p stays valid, as with realloc */
	memcpy(n, p, old < size ? old : size);
	cloak_secret_free(p);
	return n;
}

int cloak_secret_protect(void *p, int mode)
{
	if (!p || (mode != CLOAK_NOACCESS && mode != CLOAK_READONLY && mode != CLOAK_READWRITE)) {
		errno = EINVAL;
		return -1;
	}
	return mapped_protect(p, mode);
}

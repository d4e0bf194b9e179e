/* SPDX-License-Identifier: ISC */
/*
 * The public entry points: pooled slots for sizes up to 64 KiB, guarded
 * mappings above that, for cloak_secret_alloc_guarded() and for everything
 * in guard-all debug mode. Two rules live here because they span the pool
 * and the guarded allocations: an allocation that hits the lock limit gives
 * back what both keep for reuse and tries once more; and once no secret at
 * all is live, both give every mapping back, so that no memfd_secret file is
 * left to block hibernation.
 */
#include "backend.h"
#include "frontend.h"
#include "idle.h"
#include "lifecycle.h"
#include "mapped.h"
#include "pool.h"
#include "secretmem.h"
#include "stats.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

/* What the public calls return for an argument they refuse. */
static int invalid_argument(void)
{
	errno = EINVAL;
	return -1;
}

static inline bool guard_all(void)
{
	return CFG_LOAD(debug) & CLOAK_SECRET_DEBUG_GUARD_ALL;
}

static void *alloc_once(size_t size, size_t align, bool mark)
{
	if (align == 16 && size <= POOL_MAX_SIZE && !guard_all())
		return pool_alloc(size, mark);
	return mapped_alloc(size, align, mark);
}

static void *alloc(size_t size, size_t align, bool mark)
{
	cloak_init();
	void *p = alloc_once(size, align, mark);
	if (CLOAK_UNLIKELY(!p) && errno == EAGAIN) {
		mapped_release_cache(true);
		pool_trim();
		p = alloc_once(size, align, mark);
	}
	if (!p)
		errno = ENOMEM;
	else
		idle_after_alloc();
	return p;
}

void *cloak_secret_alloc(size_t size)
{
	return alloc(size, 16, false);
}

void *frontend_alloc(size_t size, bool mark)
{
	return alloc(size, 16, mark);
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
	return alloc(size, 1, false);
}

/*
 * The reservations of the last few secrets that were freed as the last live
 * one: their memory went back to the kernel with everything else, so a
 * second free of such a pointer finds no mapping at all. Remembering where
 * they were lets that misuse be named ("a double free of a pooled secret
 * whose memory was given back") instead of being taken for a pointer from
 * another allocator. Written and read with relaxed atomics: a race can only
 * make a message less precise.
 */
#define GIVEN_BACK_SLOTS 8
static struct {
	uintptr_t start, end;
	int kind;
} given_back[GIVEN_BACK_SLOTS];
static unsigned given_back_next;

static void remember_given_back(uintptr_t start, uintptr_t end, int kind)
{
	unsigned i = __atomic_fetch_add(&given_back_next, 1, __ATOMIC_RELAXED) % GIVEN_BACK_SLOTS;
	__atomic_store_n(&given_back[i].start, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&given_back[i].kind, kind, __ATOMIC_RELAXED);
	__atomic_store_n(&given_back[i].end, end, __ATOMIC_RELAXED);
	__atomic_store_n(&given_back[i].start, start, __ATOMIC_RELAXED);
}

/* The kind of secret that lived at p before libcloak gave its memory back,
 * or 0. */
static int given_back_kind(const void *p)
{
	uintptr_t a = (uintptr_t)p;
	for (unsigned i = 0; i < GIVEN_BACK_SLOTS; i++) {
		uintptr_t start = __atomic_load_n(&given_back[i].start, __ATOMIC_RELAXED);
		if (start && a >= start && a < __atomic_load_n(&given_back[i].end, __ATOMIC_RELAXED))
			return __atomic_load_n(&given_back[i].kind, __ATOMIC_RELAXED);
	}
	return 0;
}

static _Noreturn void foreign_pointer(const char *op, const void *p)
{
	int kind = given_back_kind(p);
	if (kind)
		cloak_misuse("%s(%p): a double free (or use after free) of a %s secret: it was freed "
		             "already, as the last live secret, and libcloak then gave its memory back "
		             "to the kernel", op, p, kind == MAP_KIND_ARENA ? "pooled" : "guarded or large");
	cloak_misuse("%s(%p): not a live libcloak allocation (a double free of a secret whose "
	             "memory libcloak has given back, or a pointer from another allocator)", op, p);
}

/* The mapping of a live secret p, or the end with a message naming op. */
static struct secret_map *mapping_of(const void *p, const char *op)
{
	struct secret_map *m = backend_lookup(p);
	if (!m)
		foreign_pointer(op, p);
	if (m == &backend_dropped)
		cloak_misuse("%s(%p): a secret of the parent process; this child was forked with "
		             "CLOAK_SECRET_FORK_DROP and does not have it (choose "
		             "CLOAK_SECRET_FORK_COPY to keep secrets across fork)", op, p);
	return m;
}

void cloak_secret_free(void *p)
{
	if (!p)
		return;
	struct secret_map *m = mapping_of(p, "cloak_secret_free");
	uintptr_t resv = (uintptr_t)m->resv, resv_end = resv + m->resv_len;
	int kind = m->kind;
	if (kind == MAP_KIND_ARENA)
		pool_free(p);
	else
		mapped_free(p);
	/* The free that leaves nothing live: its memory goes back to the kernel
	 * now or after the idle delay (idle.c); remembered so that a later free
	 * of the same pointer is named a double free. */
	if (!pool_busy() && !mapped_busy())
		remember_given_back(resv, resv_end, kind);
	idle_after_free();
}

size_t cloak_secret_usable_size(const void *p)
{
	if (!p)
		return 0;
	if (mapping_of(p, "cloak_secret_usable_size")->kind == MAP_KIND_ARENA)
		return pool_size(p);
	return mapped_size(p);
}

bool frontend_owns(const void *p)
{
	return backend_lookup(p) != NULL;
}

bool frontend_marked(const void *p)
{
	if (mapping_of(p, "CRYPTO_secure_allocated")->kind == MAP_KIND_ARENA)
		return pool_marked(p);
	return mapped_marked(p);
}

size_t frontend_round_size(size_t size)
{
	if (size <= POOL_MAX_SIZE && !guard_all())
		return pool_class_usable(pool_class_of(size));
	return size > SIZE_MAX - 15 ? size : (size + 15) & ~(size_t)15;
}

void *cloak_secret_realloc(void *p, size_t size)
{
	if (!p)
		return cloak_secret_alloc(size);
	bool mark = frontend_marked(p);
	if (mapping_of(p, "cloak_secret_realloc")->kind == MAP_KIND_ARENA) {
		if (!guard_all() && pool_resize(p, size))
			return p;
		size_t old = pool_size(p);
		void *n = alloc(size, 16, mark);
		if (!n)
			return NULL; /* p stays valid, as with realloc */
		memcpy(n, p, old < size ? old : size);
		cloak_secret_free(p);
		return n;
	}
	/* A guarded secret stays guarded, and keeps its protection. */
	size_t align;
	int mode;
	mapped_kind(p, &align, &mode);
	void *n = align == 1 || mode != CLOAK_SECRET_READWRITE ? alloc(size, align, mark)
	                                                       : alloc(size, 16, mark);
	if (!n)
		return NULL;
	mapped_read(p, n, size);
	if (mode != CLOAK_SECRET_READWRITE && mapped_protect(n, mode) != 0) {
		cloak_secret_free(n);
		return NULL;
	}
	cloak_secret_free(p);
	return n;
}

int cloak_secret_protect(void *p, int mode)
{
	if (!p || (mode != CLOAK_SECRET_NOACCESS && mode != CLOAK_SECRET_READONLY &&
	           mode != CLOAK_SECRET_READWRITE))
		return invalid_argument();
	if (!backend_owner(p, MAP_KIND_MAPPED)) {
		set_last_error("cloak_secret_protect(%p): not a guarded allocation (pooled secrets "
		               "share pages; use cloak_secret_alloc_guarded)", p);
		return invalid_argument();
	}
	return mapped_protect(p, mode);
}

/* A cloak_secret_set_* call: `value` goes into `*setting` if `valid`, after
 * the library has read its environment, so that the call has the last word. */
static int set_setting(int *setting, int value, bool valid)
{
	if (!valid)
		return invalid_argument();
	cloak_init();
	__atomic_store_n(setting, value, __ATOMIC_RELAXED);
	return 0;
}

int cloak_secret_set_policy(int policy)
{
	return set_setting(&cloak_cfg.policy, policy,
	                   policy == CLOAK_SECRET_POLICY_SECRETMEM_ONLY ||
	                   policy == CLOAK_SECRET_POLICY_ALLOW_MLOCK_FALLBACK);
}

int cloak_secret_set_debug(int flags)
{
	return set_setting(&cloak_cfg.debug, flags, !(flags & ~CLOAK_SECRET_DEBUG_GUARD_ALL));
}

int cloak_secret_set_fork(int mode)
{
	return set_setting(&cloak_cfg.fork_mode, mode,
	                   mode == CLOAK_SECRET_FORK_DROP || mode == CLOAK_SECRET_FORK_COPY);
}

int cloak_secret_info(struct cloak_secret_info *out)
{
	if (!out)
		return invalid_argument();
	cloak_init();
	memset(out, 0, sizeof *out);
	out->backend = backend_current();
	const unsigned checks = CLOAK_SECRET_PROT_CANARIES | CLOAK_SECRET_PROT_ZERO_ON_FREE |
	                        CLOAK_SECRET_PROT_NO_FORK;
	if (out->backend == CLOAK_SECRET_BACKEND_SECRETMEM)
		out->protections = CLOAK_SECRET_PROT_NO_DIRECT_MAP | CLOAK_SECRET_PROT_LOCKED |
		                   CLOAK_SECRET_PROT_NO_DUMP | CLOAK_SECRET_PROT_NO_PEEK | checks;
	else if (out->backend == CLOAK_SECRET_BACKEND_MLOCK)
		out->protections = CLOAK_SECRET_PROT_LOCKED | CLOAK_SECRET_PROT_NO_DUMP | checks;
	out->policy = CFG_LOAD(policy);
	out->debug = CFG_LOAD(debug);
	out->fork_mode = CFG_LOAD(fork_mode);
	if (out->backend != CLOAK_SECRET_BACKEND_NONE && (out->debug & CLOAK_SECRET_DEBUG_GUARD_ALL))
		out->protections |= CLOAK_SECRET_PROT_GUARD_ALL;
	struct memlock_info mi;
	memlock_query(&mi);
	out->memlock_soft = mi.soft;
	out->memlock_hard = mi.hard;
	out->cap_ipc_lock = mi.cap_ipc_lock;
	out->arena_size = pool_arena_max();
	out->pooled_max = POOL_MAX_SIZE;
	struct backend_counts bc;
	backend_counts(&bc);
	out->secretmem_files = bc.secretmem_files;
	out->blocks_hibernation = bc.secretmem_files > 0;
	return 0;
}

int cloak_secret_stats(struct cloak_secret_stats *out)
{
	if (!out)
		return invalid_argument();
	cloak_init();
	stats_collect(out);
	return 0;
}

void cloak_secret_stats_print(int fd)
{
	cloak_init();
	stats_print(fd);
}

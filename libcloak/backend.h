/* SPDX-License-Identifier: ISC */
/*
 * Secret mappings, the layer under the pool and the guarded allocations.
 *
 * Each mapping lives inside a reservation of its own: PROT_NONE address space,
 * 2 MiB-aligned and a multiple of 2 MiB, that libcloak alone owns. So one
 * lookup of a pointer's 2 MiB region in a table tells libcloak's pointers from
 * everyone else's (no lock), and the PROT_NONE around a mapping is its guard.
 * The secret pages come from memfd_secret, or, if the policy accepts it, from
 * locked anonymous memory; either way MADV_DONTFORK, so a child never shares
 * them. This layer also keeps the list of every mapping, which is what a
 * forked child's copy is made from, and the memlock and hibernation counts.
 */
#ifndef CLOAK_LIBCLOAK_BACKEND_H
#define CLOAK_LIBCLOAK_BACKEND_H

#include "core.h"

#define REGION_SHIFT 21
#define REGION_SIZE ((size_t)1 << REGION_SHIFT)

enum map_kind { MAP_KIND_ARENA = 1, MAP_KIND_MAPPED = 2 };

struct secret_map {
	char *base;         /* the secret pages */
	size_t len;
	char *resv;         /* the reservation around them */
	size_t resv_len;
	int prot;           /* PROT_* now in force on the secret pages */
	int backend;        /* CLOAK_SECRET_BACKEND_SECRETMEM or _MLOCK */
	enum map_kind kind;
	void *owner;        /* the pool's arena or mapped.c's record */
	struct secret_map *next, *prev; /* every live mapping */
	size_t fork_offset; /* where its copy sits in the file a forked child copies from */
	size_t populated;   /* bytes from base faulted in (backend_populate) */
};

/* What backend_lookup returns for addresses of a parent's secrets in a child
 * that dropped them at fork (CLOAK_SECRET_FORK_DROP): reserved, never reused. */
extern struct secret_map backend_dropped CLOAK_HIDDEN;

/* Which backend new memory would come from under the current policy. */
int backend_current(void) CLOAK_HIDDEN;

/* Maps `len` bytes (a page multiple) of secret memory `lead` bytes into a
 * fresh reservation, with at least a page of PROT_NONE after it if `guard`.
 * NULL with errno ENOMEM and a diagnostic (cloak_secret_last_error) on
 * failure; errno is EAGAIN instead when the lock limit was the cause, so the
 * caller may give back cached memory and try again. */
struct secret_map *backend_map(size_t len, size_t lead, bool guard, enum map_kind kind,
                               void *owner) CLOAK_HIDDEN;
/* Every page of a MAP_KIND_MAPPED mapping is faulted in by backend_map; an
 * arena's pages only when backend_populate hands them out, so that an arena
 * charges the lock limit only for what its runs use. Some kernels charge
 * secret pages to RLIMIT_MEMLOCK when they are first touched, per user, and
 * a store past the limit is then a SIGBUS: faulting pages in through a
 * system call before they are handed out turns that into an error. */
/* Faults in m's pages up to base + end (from where the last call stopped:
 * arenas hand out their lowest free pages first). false with a diagnostic
 * and errno EAGAIN (the lock limit) or ENOMEM; pages faulted in stay so.
 * Call with the owner's lock held. */
bool backend_populate(struct secret_map *m, size_t end) CLOAK_HIDDEN;
/* Unmaps the pages and releases the reservation. */
void backend_unmap(struct secret_map *m) CLOAK_HIDDEN;
/* mprotect with the mode recorded, so copies for children get it too. */
int backend_protect(struct secret_map *m, int prot) CLOAK_HIDDEN;

/* The mapping whose reservation holds p; NULL if p is not libcloak's, or
 * &backend_dropped. Lock-free. */
static inline struct secret_map *backend_lookup(const void *p);
/* The owner (the pool's arena or mapped.c's record) of the mapping of `kind`
 * whose reservation holds p; NULL if p is in none of that kind. Lock-free. */
static inline void *backend_owner(const void *p, enum map_kind kind);

/* Counts for statistics and cloak_secret_info. */
struct backend_counts {
	uint64_t bytes;      /* secret bytes mapped */
	uint64_t maps;       /* secret mappings (VMAs) */
	unsigned secretmem_files;
};
void backend_counts(struct backend_counts *out) CLOAK_HIDDEN;
/* The lock limit that applies to secret memory: the soft RLIMIT_MEMLOCK, or
 * UINT64_MAX with CAP_IPC_LOCK or no limit. */
uint64_t backend_memlock_limit(void) CLOAK_HIDDEN;

/* ---- fork, called by lifecycle.c in its order ---- */
void backend_fork_prepare(int fork_mode) CLOAK_HIDDEN; /* takes the lock, stages copies */
void backend_fork_parent(void) CLOAK_HIDDEN;
/* The child's own copy of every mapping at the same address (COPY), or the
 * addresses reserved and every record dropped (DROP). */
void backend_fork_child(int fork_mode) CLOAK_HIDDEN;

/* ---- the address table, read without a lock ---- */
#define TABLE_L2_BITS 13
#define TABLE_L1_SIZE ((size_t)1 << (47 - REGION_SHIFT - TABLE_L2_BITS))
extern struct secret_map **backend_table[TABLE_L1_SIZE] CLOAK_HIDDEN;

static inline struct secret_map *backend_lookup(const void *p)
{
	uintptr_t r = (uintptr_t)p >> REGION_SHIFT;
	if (r >> (47 - REGION_SHIFT))
		return NULL;
	struct secret_map **l2 = __atomic_load_n(&backend_table[r >> TABLE_L2_BITS], __ATOMIC_ACQUIRE);
	if (!l2)
		return NULL;
	return __atomic_load_n(&l2[r & (((uintptr_t)1 << TABLE_L2_BITS) - 1)], __ATOMIC_ACQUIRE);
}

static inline void *backend_owner(const void *p, enum map_kind kind)
{
	struct secret_map *m = backend_lookup(p); /* backend_dropped is of no kind */
	return m && m->kind == kind ? m->owner : NULL;
}

#endif

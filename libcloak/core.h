/* SPDX-License-Identifier: ISC */
/*
 * libcloak's bottom layer, used by every module above it: the process-wide
 * settings, error reporting, and the format of the header and canaries that
 * guard each secret. The layers, each calling only the ones below it:
 *
 *   api.c        the public cloak_secret_* entry points (and frontend.h)
 *   lifecycle.c  start-up, the environment, fork handlers in their order, exit
 *   stats.c      counters of every module, CLOAK_STATS
 *   pool.c       small secrets in arenas      mapped.c  guarded and large secrets
 *   backend.c    secret mappings: memfd_secret or the accepted fallback, the
 *                address table, memlock accounting, copies for forked children
 *   core.c       this file's settings and diagnostics
 *
 * Nothing here is exported from the shared libraries (see the .map files).
 */
#ifndef CLOAK_LIBCLOAK_CORE_H
#define CLOAK_LIBCLOAK_CORE_H

#include <cloak/secret.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CLOAK_HIDDEN __attribute__((visibility("hidden")))
#define CLOAK_LIKELY(x) __builtin_expect(!!(x), 1)
#define CLOAK_UNLIKELY(x) __builtin_expect(!!(x), 0)

#define PAGE_SIZE_BYTES ((size_t)4096)
#define PAGE_ROUND(n) (((n) + PAGE_SIZE_BYTES - 1) & ~(PAGE_SIZE_BYTES - 1))
/* Largest request served from the pool; larger ones get a guarded mapping. */
#define POOL_MAX_SIZE ((size_t)64 << 10)

/* Settings, written by lifecycle.c at start-up and by the cloak_secret_set_*
 * calls; every access is atomic (relaxed), since threads read them at any
 * time. */
struct cloak_config {
	int policy;              /* CLOAK_SECRET_POLICY_* */
	int debug;               /* CLOAK_SECRET_DEBUG_* */
	int fork_mode;           /* CLOAK_SECRET_FORK_* */
	int misuse_signal;       /* 0: abort on misuse; the sodium front end sets SIGSEGV */
	bool force_no_secretmem; /* CLOAK_TEST_NO_SECRETMEM=1: pretend the kernel lacks it */
	bool print_stats;        /* CLOAK_STATS=1 */
	uint64_t key;            /* tag and canary keys, random per process */
	uint64_t canary_key;
};
extern struct cloak_config cloak_cfg CLOAK_HIDDEN;

#define CFG_LOAD(field) __atomic_load_n(&cloak_cfg.field, __ATOMIC_RELAXED)
#define CFG_STORE(field, v) __atomic_store_n(&cloak_cfg.field, (v), __ATOMIC_RELAXED)

/* The doubly linked lists of every layer (the backend's mappings, mapped.c's
 * records, the pool's arenas and runs): elements link through their `next`
 * and `prev` fields, `head` points at the first. Call with the list's lock
 * held. */
#define DLIST_PUSH(head, e)                    \
	do {                                   \
		(e)->prev = NULL;              \
		(e)->next = (head);            \
		if ((e)->next)                 \
			(e)->next->prev = (e); \
		(head) = (e);                  \
	} while (0)
#define DLIST_REMOVE(head, e)                        \
	do {                                         \
		if ((e)->prev)                       \
			(e)->prev->next = (e)->next; \
		else                                 \
			(head) = (e)->next;          \
		if ((e)->next)                       \
			(e)->next->prev = (e)->prev; \
	} while (0)

/* Sets the calling thread's diagnostic (printf-style); callers also set errno. */
void set_last_error(const char *fmt, ...) CLOAK_HIDDEN __attribute__((format(printf, 1, 2)));
/* Writes "libcloak: <message>" to stderr and aborts: for failures of the
 * library itself. */
_Noreturn void cloak_die(const char *fmt, ...) CLOAK_HIDDEN __attribute__((format(printf, 1, 2)));
/* Like cloak_die, for misuse by the caller (overflow, underflow, double free,
 * foreign pointer): ends with cloak_cfg.misuse_signal if one is set, as the
 * API a front end imitates does, else aborts. */
_Noreturn void cloak_misuse(const char *fmt, ...) CLOAK_HIDDEN __attribute__((format(printf, 1, 2)));

/*
 * Every secret is preceded by an 8-byte header: its requested size (the low
 * 31 bits; bit 31 is a mark the OpenSSL front end uses for secure-heap
 * allocations) and a 32-bit tag keyed with a per-process secret and the
 * address, so underflows, foreign pointers and double frees are told apart on
 * free. Guarded and large secrets also have an 8-byte canary before the
 * header, so the 16 bytes before them are checked, as libsodium checks.
 */
struct slot_header {
	uint32_t size;
	uint32_t tag;
};
#define HEADER_FREE_SIZE 0xffffffffu
#define HEADER_MARK 0x80000000u
#define HEADER_SIZE_MASK 0x7fffffffu
enum tag_kind { TAG_POOLED = 1, TAG_FREE = 2, TAG_MAPPED = 3 };

static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}
static inline uint32_t header_tag(const void *user, uint32_t size, enum tag_kind kind)
{
	uint64_t x = (uintptr_t)user ^ cloak_cfg.key;
	x = mix64(x ^ ((uint64_t)size << 32) ^ (uint64_t)kind << 2);
	return (uint32_t)(x >> 32);
}
static inline uint64_t canary_value(const void *user, size_t size)
{
	return mix64((uintptr_t)user ^ cloak_cfg.canary_key ^ size);
}

#endif

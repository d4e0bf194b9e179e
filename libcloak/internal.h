/*
 * libcloak internals shared by its modules:
 *   backend.c  where secret memory comes from (memfd_secret or the accepted
 *              mlock fallback), the policy, diagnostics, cloak_secret_info()
 *   pool.c     size classes, 2 MiB arenas, per-thread caches: the fast path
 *   mapped.c   allocations on their own guarded pages (guarded, large, debug)
 *   stats.c    counters, cloak_secret_stats(), CLOAK_STATS=1 at exit
 *   api.c      the public entry points, dispatching between pool and mapped
 * Nothing here is exported from libcloak.so (see libcloak.map).
 */
#ifndef CLOAK_LIBCLOAK_INTERNAL_H
#define CLOAK_LIBCLOAK_INTERNAL_H

#include <cloak/secret.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CLOAK_HIDDEN __attribute__((visibility("hidden")))
#define CLOAK_LIKELY(x) __builtin_expect(!!(x), 1)
#define CLOAK_UNLIKELY(x) __builtin_expect(!!(x), 0)

#define PAGE_SIZE_BYTES 4096u
#define ARENA_SIZE ((size_t)2 << 20)
#define POOL_MAX_SIZE ((size_t)64 << 10)

/* Every allocation is preceded by this 8-byte header: the requested size
 * (low 32 bits for mapped allocations) and a tag keyed with a per-process
 * secret and the address, so underflows, foreign pointers and double frees
 * are told apart on free. */
struct slot_header {
	uint32_t size;
	uint32_t tag;
};
#define HEADER_FREE_SIZE 0xffffffffu
enum tag_kind { TAG_POOLED = 1, TAG_FREE = 2, TAG_MAPPED = 3 };

/* ---- backend.c ---- */
struct cloak_config {
	int policy;         /* CLOAK_POLICY_* */
	int debug;          /* CLOAK_DEBUG_* */
	bool force_no_secretmem; /* CLOAK_TEST_NO_SECRETMEM=1: pretend the kernel lacks it */
	bool print_stats;
	uint64_t key;       /* tag and canary key, random per process */
	uint64_t canary_key;
};
extern struct cloak_config cloak_cfg CLOAK_HIDDEN;

/* Runs once before anything else (thread-safe, cheap after the first call). */
void cloak_init(void) CLOAK_HIDDEN;
/* Which backend new memory would come from under the current policy. */
int backend_current(void) CLOAK_HIDDEN;
/* Maps `len` bytes of secret memory at an address aligned to `align` (a
 * power of two ≥ the page size) with `guard` bytes of PROT_NONE on each side.
 * NULL, errno ENOMEM and a diagnostic (cloak_secret_last_error) on failure. */
char *backend_map(size_t len, size_t align, size_t guard) CLOAK_HIDDEN;
void backend_unmap(char *p, size_t len, size_t guard) CLOAK_HIDDEN;
/* Sets the calling thread's diagnostic (printf-style). */
void set_last_error(const char *fmt, ...) CLOAK_HIDDEN __attribute__((format(printf, 1, 2)));
/* Writes "libcloak: <message>" to stderr and aborts. */
_Noreturn void cloak_die(const char *fmt, ...) CLOAK_HIDDEN __attribute__((format(printf, 1, 2)));

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

/* ---- pool.c ---- */
void pool_init(void) CLOAK_HIDDEN;
bool pool_owns(const void *p) CLOAK_HIDDEN;
void *pool_alloc(size_t size) CLOAK_HIDDEN;
void pool_free(void *p) CLOAK_HIDDEN;
/* In-place resize when the new size fits the slot; false otherwise. */
bool pool_resize(void *p, size_t size) CLOAK_HIDDEN;
size_t pool_size(const void *p) CLOAK_HIDDEN;
void pool_atfork_prepare(void) CLOAK_HIDDEN;
void pool_atfork_parent(void) CLOAK_HIDDEN;
void pool_atfork_child(void) CLOAK_HIDDEN;
/* Size-class table (exposed for tests). */
unsigned pool_class_of(size_t size) CLOAK_HIDDEN;
size_t pool_class_usable(unsigned cls) CLOAK_HIDDEN;
unsigned pool_class_count(void) CLOAK_HIDDEN;

/* ---- mapped.c ---- */
/* align 1: the end of the data is the end of the page (one-byte overflow
 * faults); align 16: the pointer is 16-aligned and the slack before the
 * guard page holds a canary. */
void *mapped_alloc(size_t size, size_t align) CLOAK_HIDDEN;
/* Frees p if it is a live mapped allocation; false if it is not one. */
bool mapped_free(void *p) CLOAK_HIDDEN;
bool mapped_owns(const void *p) CLOAK_HIDDEN;
/* SIZE_MAX if p is not a live mapped allocation. */
size_t mapped_size(const void *p) CLOAK_HIDDEN;
int mapped_protect(void *p, int mode) CLOAK_HIDDEN;
void mapped_atfork_prepare(void) CLOAK_HIDDEN;
void mapped_atfork_parent(void) CLOAK_HIDDEN;
void mapped_atfork_child(void) CLOAK_HIDDEN;

/* ---- stats.c ---- */
/* Process-wide counters changed on slow paths (under their module's lock,
 * atomically). The per-thread fast-path counters live in pool.c's caches. */
struct global_counters {
	uint64_t arenas;
	uint64_t arena_bytes;
	uint64_t mapped_allocs;
	uint64_t mapped_bytes;     /* secret bytes of mapped allocations */
	uint64_t mapped_requested; /* bytes requested by them */
	uint64_t mapped_total_allocs, mapped_total_frees;
};
extern struct global_counters cloak_counters CLOAK_HIDDEN;
void stats_start(void) CLOAK_HIDDEN;
/* Sums of the pool's per-thread counters. */
void pool_collect(uint64_t *allocs, uint64_t *frees, int64_t *live, int64_t *live_bytes) CLOAK_HIDDEN;
void stats_reset_after_fork(void) CLOAK_HIDDEN;

#endif

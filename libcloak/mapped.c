/* SPDX-License-Identifier: ISC */
/*
 * Guarded and large secrets, each on a secret mapping of its own with
 * PROT_NONE around it (backend.c's reservation):
 *
 *     [PROT_NONE ... guard][ ... canary | header | data (end at the page end,
 *     or 16-aligned with a canary in the slack) ][guard ... PROT_NONE]
 *
 * They can be protected with cloak_secret_protect(), so their bookkeeping
 * lives outside them, in a record reached through backend_lookup.
 *
 * Freed mappings are zeroed and kept for reuse (a fresh memfd_secret
 * mapping costs tens of microseconds a page to fault in, the zeroing only
 * what the secret used): up to CACHE_MAX of them and a byte budget within the
 * lock limit, the oldest making room for the newest. A reused mapping may be
 * larger than asked for; the data still ends at its end, against the guard.
 * The cache goes back to the kernel once no secret at all is live (idle.c),
 * when an allocation hits the lock limit, and before fork.
 */
#include "mapped.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define CACHE_MAX 16
#define CACHE_BYTES_MAX ((size_t)8 << 20)
#define CANARY_BYTES 8 /* before the header: 16 bytes before the data are checked */

struct mapping {
	struct secret_map *map;
	char *user;          /* NULL while cached */
	size_t size, rounded, align;
	int mode;            /* CLOAK_SECRET_NOACCESS, _READONLY or _READWRITE */
	bool mark;
	struct mapping *next, *prev; /* every record: live and cached */
	struct mapping *next_cached;
};

static pthread_mutex_t map_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mapping *records, *cache;
static size_t cache_count, cache_bytes;
/* Written under map_lock, read atomically. */
static uint64_t live, live_bytes, allocs, frees;

#define STORE(field, v) __atomic_store_n(&(field), (v), __ATOMIC_RELAXED)
#define LOAD(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)

static const int prot_of_mode[] = { [CLOAK_SECRET_NOACCESS] = PROT_NONE,
	                            [CLOAK_SECRET_READONLY] = PROT_READ,
	                            [CLOAK_SECRET_READWRITE] = PROT_READ | PROT_WRITE };

static inline uint8_t slack_byte(const char *user, size_t size, size_t i)
{
	return (uint8_t)(canary_value(user, size) >> (8 * (i % 8)));
}

static uint64_t front_canary(const char *user, size_t size)
{
	return canary_value(user - CANARY_BYTES - sizeof(struct slot_header), size);
}

/* The smallest cached mapping of at least len bytes and at most twice that;
 * call with map_lock held. */
static struct mapping *cache_take(size_t len)
{
	struct mapping **best = NULL;
	for (struct mapping **c = &cache; *c; c = &(*c)->next_cached) {
		size_t have = (*c)->map->len;
		if (have >= len && have / 2 <= len && (!best || have < (*best)->map->len))
			best = c;
	}
	if (!best)
		return NULL;
	struct mapping *m = *best;
	*best = m->next_cached;
	cache_count--;
	cache_bytes -= m->map->len;
	return m;
}

static size_t cache_budget(void)
{
	uint64_t limit = backend_memlock_limit();
	return limit / 4 < CACHE_BYTES_MAX ? (size_t)(limit / 4) : CACHE_BYTES_MAX;
}

/* The oldest cached mappings go until one of `len` bytes fits in the cache
 * (by count, and within `budget` bytes): the one freed last is the likeliest to be asked for
 * again, so a burst of small guarded secrets cannot keep a large mapping out
 * for good. Call with map_lock held; returns the records to unmap, linked
 * through next_cached. */
static struct mapping *cache_make_room(size_t len, size_t budget)
{
	struct mapping *evicted = NULL;
	while (cache && (cache_count >= CACHE_MAX || cache_bytes + len > budget)) {
		struct mapping **oldest = &cache; /* the list is newest first */
		while ((*oldest)->next_cached)
			oldest = &(*oldest)->next_cached;
		struct mapping *m = *oldest;
		*oldest = NULL;
		cache_count--;
		cache_bytes -= m->map->len;
		DLIST_REMOVE(records, m);
		m->next_cached = evicted;
		evicted = m;
	}
	return evicted;
}

static void unmap_list(struct mapping *list)
{
	for (struct mapping *m = list, *next; m; m = next) {
		next = m->next_cached;
		backend_unmap(m->map);
		free(m);
	}
}

void *mapped_alloc(size_t size, size_t align, bool mark)
{
	if (size > HEADER_SIZE_MASK && mark) {
		set_last_error("cannot allocate %zu bytes: too large", size);
		errno = ENOMEM;
		return NULL;
	}
	if (size > ((size_t)1 << 46)) {
		set_last_error("cannot allocate %zu bytes: too large", size);
		errno = ENOMEM;
		return NULL;
	}
	size_t rounded = (size + align - 1) & ~(align - 1);
	size_t len = PAGE_ROUND(rounded + CANARY_BYTES + sizeof(struct slot_header));
	pthread_mutex_lock(&map_lock);
	struct mapping *m = cache_take(len);
	pthread_mutex_unlock(&map_lock);
	if (!m) {
		m = calloc(1, sizeof *m);
		if (!m) {
			set_last_error("cannot allocate bookkeeping for a guarded secret");
			errno = ENOMEM;
			return NULL;
		}
		m->map = backend_map(len, PAGE_SIZE_BYTES, true, MAP_KIND_MAPPED, m);
		if (!m->map) {
			free(m);
			return NULL;
		}
		pthread_mutex_lock(&map_lock);
		DLIST_PUSH(records, m);
		pthread_mutex_unlock(&map_lock);
	}
	char *user = m->map->base + m->map->len - rounded;
	m->size = size;
	m->rounded = rounded;
	m->align = align;
	m->mode = CLOAK_SECRET_READWRITE;
	m->mark = mark;
	/* The header is unaligned when the data ends exactly at the page end. */
	uint32_t field = (uint32_t)(size & HEADER_SIZE_MASK) | (mark ? HEADER_MARK : 0);
	struct slot_header h = { field, header_tag(user, field, TAG_MAPPED) };
	memcpy(user - sizeof h, &h, sizeof h);
	uint64_t c = front_canary(user, size);
	memcpy(user - sizeof h - CANARY_BYTES, &c, sizeof c);
	for (size_t i = size; i < rounded; i++)
		user[i] = (char)slack_byte(user, size, i);
	pthread_mutex_lock(&map_lock);
	m->user = user;
	STORE(live, live + 1);
	STORE(live_bytes, live_bytes + size);
	STORE(allocs, allocs + 1);
	pthread_mutex_unlock(&map_lock);
	return user;
}

/* The live record of p; call with map_lock held. */
static struct mapping *find_locked(const void *p)
{
	struct mapping *m = backend_owner(p, MAP_KIND_MAPPED);
	return m && m->user == p ? m : NULL;
}

static _Noreturn void not_live(const char *op, const void *p)
{
	cloak_misuse("%s(%p): not a live libcloak allocation (a double free of a guarded or "
	             "large secret, or a pointer into one that is not its start)", op, p);
}

static struct mapping *find(const void *p, const char *op)
{
	pthread_mutex_lock(&map_lock);
	struct mapping *m = find_locked(p);
	pthread_mutex_unlock(&map_lock);
	if (!m)
		not_live(op, p);
	return m;
}

static void check(const struct mapping *m, const char *user)
{
	struct slot_header h;
	memcpy(&h, user - sizeof h, sizeof h);
	uint64_t c;
	memcpy(&c, user - sizeof h - CANARY_BYTES, sizeof c);
	uint32_t field = (uint32_t)(m->size & HEADER_SIZE_MASK) | (m->mark ? HEADER_MARK : 0);
	if (h.size != field || h.tag != header_tag(user, field, TAG_MAPPED) ||
	    c != front_canary(user, m->size))
		cloak_misuse("heap underflow: cloak_secret_free(%p) found the 16 bytes before this "
		             "guarded secret damaged; something wrote before its start", (void *)user);
	for (size_t i = m->size; i < m->rounded; i++)
		if ((uint8_t)user[i] != slack_byte(user, m->size, i))
			cloak_misuse("heap overflow: cloak_secret_free(%p) found the canary after this "
			             "%zu-byte secret overwritten; something wrote past its end",
			             (void *)user, m->size);
}

void mapped_free(void *p)
{
	pthread_mutex_lock(&map_lock);
	struct mapping *m = find_locked(p);
	if (m) {
		m->user = NULL; /* a second free of p now fails to find it */
		STORE(live, live - 1);
		STORE(live_bytes, live_bytes - m->size);
		STORE(frees, frees + 1);
	}
	pthread_mutex_unlock(&map_lock);
	if (!m)
		not_live("cloak_secret_free", p);
	char *user = p;
	if (m->mode != CLOAK_SECRET_READWRITE && backend_protect(m->map, PROT_READ | PROT_WRITE))
		cloak_die("cannot make %p writable to free it: %s", p, strerror(errno));
	check(m, user);
	/* memfd_secret pages are zeroed by the kernel when freed, the mlock
	 * fallback's are not, and cached ones are reused: wipe either way. */
	explicit_bzero(user - CANARY_BYTES - sizeof(struct slot_header),
	               m->rounded + CANARY_BYTES + sizeof(struct slot_header));
	pthread_mutex_lock(&map_lock);
	struct mapping *evicted = NULL;
	size_t budget = cache_budget();
	bool keep = m->map->len <= budget;
	if (keep) {
		evicted = cache_make_room(m->map->len, budget);
		m->next_cached = cache;
		cache = m;
		cache_count++;
		cache_bytes += m->map->len;
	} else {
		DLIST_REMOVE(records, m);
	}
	pthread_mutex_unlock(&map_lock);
	unmap_list(evicted);
	if (!keep) {
		backend_unmap(m->map);
		free(m);
	}
}

size_t mapped_size(const void *p)
{
	pthread_mutex_lock(&map_lock);
	struct mapping *m = find_locked(p);
	size_t size = m ? m->size : 0;
	pthread_mutex_unlock(&map_lock);
	if (!m)
		not_live("cloak_secret_usable_size", p);
	return size;
}

bool mapped_marked(const void *p)
{
	return find(p, "CRYPTO_secure_allocated")->mark;
}

void mapped_kind(const void *p, size_t *align, int *mode)
{
	pthread_mutex_lock(&map_lock);
	struct mapping *m = find_locked(p);
	if (m) {
		*align = m->align;
		*mode = m->mode;
	}
	pthread_mutex_unlock(&map_lock);
	if (!m)
		not_live("cloak_secret_realloc", p);
}

int mapped_protect(void *p, int mode)
{
	pthread_mutex_lock(&map_lock);
	struct mapping *m = find_locked(p);
	int rc = -1;
	if (!m) {
		set_last_error("cloak_secret_protect(%p): not a guarded allocation (pooled secrets "
		               "share pages; use cloak_secret_alloc_guarded)", p);
		errno = EINVAL;
	} else if (backend_protect(m->map, prot_of_mode[mode]) == 0) {
		m->mode = mode;
		rc = 0;
	}
	pthread_mutex_unlock(&map_lock);
	return rc;
}

void mapped_read(const void *p, void *dst, size_t n)
{
	pthread_mutex_lock(&map_lock);
	struct mapping *m = find_locked(p);
	if (m && n) {
		if (m->mode == CLOAK_SECRET_NOACCESS && backend_protect(m->map, PROT_READ))
			cloak_die("cannot make %p readable to copy it: %s", p, strerror(errno));
		memcpy(dst, p, n < m->size ? n : m->size);
		if (m->mode == CLOAK_SECRET_NOACCESS)
			backend_protect(m->map, PROT_NONE);
	}
	pthread_mutex_unlock(&map_lock);
	if (!m)
		not_live("cloak_secret_realloc", p);
}

bool mapped_busy(void)
{
	return LOAD(live) != 0;
}

/* Call with map_lock held; returns the records to unmap, linked through
 * next_cached. */
static struct mapping *cache_detach(void)
{
	struct mapping *list = cache;
	for (struct mapping *m = list; m; m = m->next_cached)
		DLIST_REMOVE(records, m);
	cache = NULL;
	cache_count = cache_bytes = 0;
	return list;
}

void mapped_release_cache(bool always)
{
	pthread_mutex_lock(&map_lock);
	struct mapping *list = always || !live ? cache_detach() : NULL;
	pthread_mutex_unlock(&map_lock);
	unmap_list(list);
}

void mapped_counts(struct mapped_counts *out)
{
	pthread_mutex_lock(&map_lock);
	out->live = live;
	out->live_bytes = live_bytes;
	out->allocs = allocs;
	out->frees = frees;
	out->cached = cache_count;
	pthread_mutex_unlock(&map_lock);
}

void mapped_fork_prepare(void)
{
	pthread_mutex_lock(&map_lock);
	unmap_list(cache_detach());
}

void mapped_fork_parent(void)
{
	pthread_mutex_unlock(&map_lock);
}

/* COPY: the records stay (backend.c gives the child the pages). DROP: the
 * memory is not here: forget it (backend.c keeps the addresses reserved). */
void mapped_fork_child(int fork_mode)
{
	if (fork_mode != CLOAK_SECRET_FORK_COPY) {
		for (struct mapping *m = records, *next; m; m = next) {
			next = m->next;
			free(m);
		}
		records = NULL;
		live = live_bytes = allocs = frees = 0;
	}
	pthread_mutex_init(&map_lock, NULL);
}

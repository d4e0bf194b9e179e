/* SPDX-License-Identifier: ISC */
/*
 * The pooled allocator: small secrets (up to 64 KiB) in slots carved from
 * arenas of secret memory, so a 32-byte key costs a 48-byte slot rather than
 * a page.
 *
 * Slot layout (slot size = usable + 16, a multiple of 16; slots start at
 * 8 mod 16 so the data is 16-aligned):
 *     [8-byte header: size, keyed tag][data: usable bytes][8 bytes]
 * A keyed 8-byte canary is written right after the requested size. A free
 * slot holds zeroes except its header (the FREE tag) and a free-list link in
 * its first 8 data bytes, so allocations come back zeroed.
 *
 * Arenas are 16 KiB to 2 MiB of memfd_secret memory, each at the start of a
 * 2 MiB reservation of its own (backend.c), sized to what is in use and to
 * the lock limit. Their size buys no physical contiguity: the kernel faults
 * secretmem pages in one at a time, each from wherever the page allocator
 * finds one, so the direct map is split page by page whatever the arena
 * size; a larger arena only saves system calls. An arena is cut into runs of
 * pages, each run serving one size class; the bookkeeping (runs, page to run)
 * lives in ordinary memory, outside the secrets.
 *
 * Concurrency: threads are spread over lanes; each lane has its own lock and
 * its own runs, so threads on different lanes do not contend. A secret is
 * freed into the run (and lane) it came from, by any thread. The arena lock
 * is taken only to make or return runs (order: lane, then arena).
 *
 * Memory goes back to the kernel: a run whose slots are all free is zeroed
 * and its pages returned to its arena, unless it is the one empty run its
 * lane keeps for the class; an arena whose pages are all free is unmapped, except
 * one kept spare; and when no pooled secret is live, api.c has every arena
 * unmapped (pool_release_idle), so no memfd_secret file is left.
 */
#include "pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SMALL_CLASSES 8 /* usable 16, 32, ..., 128 */
#define STEPS_PER_DOUBLING 4
#define NUM_CLASSES (SMALL_CLASSES + STEPS_PER_DOUBLING * 9) /* up to 64 KiB */
#define MAX_LANES 8
#define ARENA_MIN ((size_t)16 << 10)
#define ARENA_MAX REGION_SIZE
#define ARENA_MAX_PAGES (ARENA_MAX / PAGE_SIZE_BYTES)
#define RUN_PREFIX 8 /* so that slot data is 16-aligned */

struct arena;

struct run {
	struct run *next, *prev; /* the lane's runs of this class that have free slots */
	struct arena *arena;
	char *base;
	uint32_t pages, cls, lane;
	uint32_t capacity, carved, live; /* slots: that fit, carved so far, handed out */
	bool listed;
	void *free;                      /* slots given back, linked through their data */
};

struct arena {
	struct secret_map *map;
	char *base;
	uint32_t pages, free_pages;
	struct arena *next, *prev;
	uint64_t free_bits[ARENA_MAX_PAGES / 64];
	struct run *run_of_page[]; /* read without a lock by pool_free */
};

struct class_info {
	uint32_t usable, slot, run_pages, min_pages; /* min_pages: one slot's worth */
};
static struct class_info classes[NUM_CLASSES];

struct lane {
	pthread_mutex_t lock;
	struct run *runs[NUM_CLASSES];
	uint8_t empty_runs[NUM_CLASSES]; /* listed runs with no live slot: 0 or 1 */
	/* Written under the lock, read atomically by pool_counts. */
	uint64_t live, live_bytes, allocs, frees;
} __attribute__((aligned(64)));
static struct lane lanes[MAX_LANES];
static unsigned lane_count = 1;
static unsigned next_lane;
static unsigned busy_lanes; /* lanes with live secrets */
static __thread struct lane *my_lane __attribute__((tls_model("initial-exec")));

static pthread_mutex_t arena_lock = PTHREAD_MUTEX_INITIALIZER;
static struct arena *arenas; /* newest first */
static uint64_t arena_count, arena_bytes, releases;
static unsigned spare_arenas; /* arenas with every page free */

#define STORE(field, v) __atomic_store_n(&(field), (v), __ATOMIC_RELAXED)
#define LOAD(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)

/* ---- size classes ---- */

unsigned pool_class_of(size_t size)
{
	if (size <= 16 * SMALL_CLASSES)
		return size ? (unsigned)((size - 1) >> 4) : 0;
	unsigned log = 63u - (unsigned)__builtin_clzll((unsigned long long)(size - 1));
	unsigned doubling = log - 7; /* size in (128 << d, 256 << d] */
	size_t base = (size_t)128 << doubling, step = base / STEPS_PER_DOUBLING;
	unsigned s = (unsigned)((size - base + step - 1) / step) - 1;
	return SMALL_CLASSES + STEPS_PER_DOUBLING * doubling + s;
}

size_t pool_class_usable(unsigned cls)
{
	if (cls >= NUM_CLASSES)
		return 0;
	if (cls < SMALL_CLASSES)
		return 16 * (cls + 1);
	unsigned k = cls - SMALL_CLASSES;
	size_t base = (size_t)128 << (k / STEPS_PER_DOUBLING);
	return base + (k % STEPS_PER_DOUBLING + 1) * base / STEPS_PER_DOUBLING;
}

unsigned pool_class_count(void)
{
	return NUM_CLASSES;
}

/* A run is one to eight pages (more if one slot needs it), whichever
 * wastes the least of its bytes; under a lock limit below 1 MiB (arenas
 * below 256 KiB), as few pages as one slot needs, so that the limit still
 * holds a run of every class in use. */
static void classes_init(void)
{
	for (unsigned c = 0; c < NUM_CLASSES; c++) {
		size_t usable = pool_class_usable(c), slot = usable + 16;
		size_t min_pages = PAGE_ROUND(RUN_PREFIX + slot) / PAGE_SIZE_BYTES;
		size_t best = min_pages, best_waste = SIZE_MAX;
		for (size_t n = min_pages; n <= (min_pages > 8 ? min_pages : 8); n++) {
			size_t bytes = n * PAGE_SIZE_BYTES - RUN_PREFIX;
			size_t waste = (bytes % slot + RUN_PREFIX) * 1000 / (n * PAGE_SIZE_BYTES);
			if (waste < best_waste)
				best = n, best_waste = waste;
		}
		classes[c] = (struct class_info){ (uint32_t)usable, (uint32_t)slot, (uint32_t)best,
			(uint32_t)min_pages };
	}
}

/* ---- arenas ---- */

static size_t floor_pow2(size_t x)
{
	return x ? (size_t)1 << (63 - __builtin_clzll((unsigned long long)x)) : 0;
}

/* A quarter of the lock limit at most, so that one arena never takes all of
 * it; 16 KiB at least. */
size_t pool_arena_max(void)
{
	uint64_t limit = backend_memlock_limit();
	if (limit == UINT64_MAX || limit / 4 >= ARENA_MAX)
		return ARENA_MAX;
	size_t cap = floor_pow2((size_t)(limit / 4));
	return cap < ARENA_MIN ? ARENA_MIN : cap;
}

/* Pages [first, first + n) of a change hands; call with arena_lock held. */
static void mark_pages(struct arena *a, size_t first, size_t n, struct run *r)
{
	for (size_t i = first; i < first + n; i++) {
		if (r)
			a->free_bits[i / 64] &= ~(1ull << (i % 64));
		else
			a->free_bits[i / 64] |= 1ull << (i % 64);
		__atomic_store_n(&a->run_of_page[i], r, __ATOMIC_RELEASE);
	}
	a->free_pages = r ? a->free_pages - (uint32_t)n : a->free_pages + (uint32_t)n;
}

static long find_free_pages(const struct arena *a, size_t n)
{
	size_t len = 0;
	for (size_t i = 0; i < a->pages; i++) {
		len = (a->free_bits[i / 64] >> (i % 64)) & 1 ? len + 1 : 0;
		if (len == n)
			return (long)(i + 1 - n);
	}
	return -1;
}

static void arena_unmap(struct arena *a)
{
	DLIST_REMOVE(arenas, a);
	STORE(arena_count, arena_count - 1);
	STORE(arena_bytes, arena_bytes - (uint64_t)a->pages * PAGE_SIZE_BYTES);
	backend_unmap(a->map);
	free(a);
}

/* A new arena of `size` bytes, or smaller ones down to `need` when the lock
 * limit refuses: arenas adapt to the limit. Call with arena_lock held. */
static struct arena *arena_new(size_t size, size_t need)
{
	for (;;) {
		size_t pages = size / PAGE_SIZE_BYTES;
		struct arena *a = calloc(1, sizeof *a + pages * sizeof a->run_of_page[0]);
		if (!a) {
			set_last_error("cannot allocate bookkeeping for a secret arena");
			errno = ENOMEM;
			return NULL;
		}
		a->map = backend_map(size, 0, false, MAP_KIND_ARENA, a);
		if (a->map) {
			a->base = a->map->base;
			a->pages = a->free_pages = (uint32_t)pages;
			for (size_t i = 0; i < pages; i++)
				a->free_bits[i / 64] |= 1ull << (i % 64);
			DLIST_PUSH(arenas, a);
			STORE(arena_count, arena_count + 1);
			STORE(arena_bytes, arena_bytes + size);
			spare_arenas++; /* every page is free until the caller takes some */
			return a;
		}
		int err = errno;
		free(a);
		if (err != EAGAIN || size <= need)
			return NULL;
		size = size / 2 >= need ? size / 2 : need;
	}
}

/* Pages for a run of class cls: from an arena with room, else a new one as
 * large as what the pool holds already (64 KiB to start with), within the
 * limit. Call with the lane's lock held; takes arena_lock. */
static struct run *run_new(unsigned cls, unsigned lane)
{
	const struct class_info *ci = &classes[cls];
	struct run *r = calloc(1, sizeof *r);
	if (!r) {
		set_last_error("cannot allocate bookkeeping for a secret run");
		errno = ENOMEM;
		return NULL;
	}
	size_t cap = pool_arena_max();
	uint32_t pages = cap < ((size_t)256 << 10) ? ci->min_pages : ci->run_pages;
	pthread_mutex_lock(&arena_lock);
	struct arena *a;
	long first = -1;
	bool fresh = false;
	for (a = arenas; a; a = a->next)
		if (a->free_pages >= pages && (first = find_free_pages(a, pages)) >= 0)
			break;
	if (!a) {
		size_t need = pages * PAGE_SIZE_BYTES;
		size_t size = (size_t)64 << 10;
		while (size < arena_bytes && size < ARENA_MAX)
			size *= 2;
		if (size > cap)
			size = cap;
		if (size < need)
			size = need;
		a = arena_new(size, need);
		first = 0;
		fresh = true;
	}
	/* The run's pages are faulted in before they are handed out: past the
	 * lock limit that is an error here, not a SIGBUS at a store later (a
	 * new arena that got no page goes back at once). */
	if (a && !backend_populate(a->map, ((size_t)first + pages) * PAGE_SIZE_BYTES)) {
		int err = errno;
		if (fresh && !a->map->populated) {
			spare_arenas--;
			arena_unmap(a);
		}
		a = NULL;
		errno = err;
	}
	if (!a) {
		pthread_mutex_unlock(&arena_lock);
		free(r);
		return NULL;
	}
	if (a->free_pages == a->pages)
		spare_arenas--;
	r->arena = a;
	r->base = a->base + (size_t)first * PAGE_SIZE_BYTES;
	r->pages = pages;
	r->cls = cls;
	r->lane = lane;
	r->capacity = (uint32_t)((pages * PAGE_SIZE_BYTES - RUN_PREFIX) / ci->slot);
	mark_pages(a, (size_t)first, pages, r);
	pthread_mutex_unlock(&arena_lock);
	return r;
}

/* The run's pages go back to its arena, zeroed; the arena goes back to the
 * kernel if it is empty and another empty one is kept. Call with the lane's
 * lock held (so that pool_release_idle cannot free the arena meanwhile). */
static void run_retire(struct run *r)
{
	size_t used = RUN_PREFIX + (size_t)r->carved * classes[r->cls].slot;
	memset(r->base, 0, used); /* links and FREE headers; the rest is zero */
	pthread_mutex_lock(&arena_lock);
	struct arena *a = r->arena;
	mark_pages(a, (size_t)(r->base - a->base) / PAGE_SIZE_BYTES, r->pages, NULL);
	if (a->free_pages == a->pages) {
		if (spare_arenas)
			arena_unmap(a);
		else
			spare_arenas++;
	}
	pthread_mutex_unlock(&arena_lock);
	free(r);
}

/* ---- lanes ---- */

static void list_add(struct lane *l, struct run *r)
{
	DLIST_PUSH(l->runs[r->cls], r);
	r->listed = true;
}

static void list_remove(struct lane *l, struct run *r)
{
	DLIST_REMOVE(l->runs[r->cls], r);
	r->next = r->prev = NULL;
	r->listed = false;
}

static struct lane *lane_of_thread(void)
{
	struct lane *l = my_lane;
	if (CLOAK_UNLIKELY(!l)) {
		unsigned i = __atomic_fetch_add(&next_lane, 1, __ATOMIC_RELAXED);
		l = my_lane = &lanes[i % LOAD(lane_count)];
	}
	return l;
}

static void count_live(struct lane *l, int delta, int64_t bytes)
{
	uint64_t before = l->live;
	STORE(l->live, l->live + (uint64_t)(int64_t)delta);
	STORE(l->live_bytes, l->live_bytes + (uint64_t)bytes);
	if (delta > 0) {
		STORE(l->allocs, l->allocs + 1);
		if (!before)
			__atomic_fetch_add(&busy_lanes, 1, __ATOMIC_RELAXED);
	} else {
		STORE(l->frees, l->frees + 1);
		if (!l->live)
			__atomic_fetch_sub(&busy_lanes, 1, __ATOMIC_RELAXED);
	}
}

static inline void write_header(char *p, size_t size, bool mark)
{
	uint32_t field = (uint32_t)size | (mark ? HEADER_MARK : 0);
	struct slot_header *h = (struct slot_header *)p - 1;
	h->size = field;
	h->tag = header_tag(p, field, TAG_POOLED);
	uint64_t c = canary_value(p, size);
	memcpy(p + size, &c, sizeof c);
}

void *pool_alloc(size_t size, bool mark)
{
	unsigned cls = pool_class_of(size);
	const struct class_info *ci = &classes[cls];
	struct lane *l = lane_of_thread();
	pthread_mutex_lock(&l->lock);
	struct run *r = l->runs[cls];
	if (CLOAK_UNLIKELY(!r)) {
		r = run_new(cls, (unsigned)(l - lanes));
		if (!r) {
			pthread_mutex_unlock(&l->lock);
			return NULL;
		}
		list_add(l, r);
		l->empty_runs[cls]++;
	}
	char *p;
	if (r->free) {
		p = r->free;
		r->free = *(void **)p;
		*(void **)p = NULL;
	} else {
		/* fresh secret memory is zero */
		p = r->base + RUN_PREFIX + (size_t)r->carved * ci->slot + sizeof(struct slot_header);
		STORE(r->carved, r->carved + 1);
	}
	if (!r->live++)
		l->empty_runs[cls]--;
	if (r->live == r->capacity)
		list_remove(l, r);
	count_live(l, 1, (int64_t)size);
	pthread_mutex_unlock(&l->lock);
	write_header(p, size, mark);
	return p;
}

/* The run holding the live pooled slot p, after checking that p is where a
 * slot's data starts; NULL otherwise. */
static struct run *run_of(const char *p)
{
	struct arena *a = backend_owner(p, MAP_KIND_ARENA);
	if (!a || p < a->base || p >= a->base + (size_t)a->pages * PAGE_SIZE_BYTES)
		return NULL;
	struct run *r = __atomic_load_n(&a->run_of_page[(size_t)(p - a->base) / PAGE_SIZE_BYTES],
	                                __ATOMIC_ACQUIRE);
	if (!r)
		return NULL;
	size_t off = (size_t)(p - r->base);
	size_t slot = classes[r->cls].slot, first = RUN_PREFIX + sizeof(struct slot_header);
	if (off < first || (off - first) % slot || (off - first) / slot >= LOAD(r->carved))
		return NULL;
	return r;
}

static _Noreturn void not_a_slot(const char *op, const void *p)
{
	cloak_misuse("%s(%p): not a live libcloak allocation (a pointer into a secret arena "
	             "that is not the start of a secret, or a secret freed before)", op, p);
}

/* Checks the header and canary of a live pooled slot; returns its run. */
static struct run *check_slot(const char *p, const char *op)
{
	struct run *r = run_of(p);
	if (CLOAK_UNLIKELY(!r))
		not_a_slot(op, p);
	const struct slot_header *h = (const struct slot_header *)p - 1;
	uint32_t field = h->size, size = field & HEADER_SIZE_MASK;
	if (CLOAK_UNLIKELY(h->tag != header_tag(p, field, TAG_POOLED))) {
		if (field == HEADER_FREE_SIZE && h->tag == header_tag(p, field, TAG_FREE))
			cloak_misuse("double free: %s(%p) on a secret that was already freed", op,
			             (const void *)p);
		cloak_misuse("heap underflow or invalid pointer: the header before %p is damaged "
		             "(%s); something wrote before the start of this secret",
		             (const void *)p, op);
	}
	size_t usable = classes[r->cls].usable;
	if (CLOAK_UNLIKELY(size > usable))
		cloak_misuse("heap corruption: %s(%p) found size %u in a %zu-byte slot", op,
		             (const void *)p, size, usable);
	uint64_t c;
	memcpy(&c, p + size, sizeof c);
	if (CLOAK_UNLIKELY(c != canary_value(p, size)))
		cloak_misuse("heap overflow: %s(%p) found the canary after this %u-byte secret "
		             "overwritten; something wrote past its end",
		             op, (const void *)p, size);
	return r;
}

void pool_free(void *ptr)
{
	char *p = ptr;
	struct run *r = check_slot(p, "cloak_secret_free");
	size_t size = ((struct slot_header *)p - 1)->size & HEADER_SIZE_MASK;
	memset(p, 0, classes[r->cls].usable + 8);
	struct slot_header *h = (struct slot_header *)p - 1;
	h->size = HEADER_FREE_SIZE;
	h->tag = header_tag(p, HEADER_FREE_SIZE, TAG_FREE);
	struct lane *l = &lanes[r->lane];
	pthread_mutex_lock(&l->lock);
	*(void **)p = r->free;
	r->free = p;
	r->live--;
	if (!r->listed)
		list_add(l, r);
	count_live(l, -1, -(int64_t)size);
	/* One empty run of the class stays in the lane for the next secrets, so
	 * that a lane going back and forth over a run's capacity does not make
	 * and retire a run each time. */
	if (!r->live) {
		if (l->empty_runs[r->cls]) {
			list_remove(l, r);
			run_retire(r);
		} else {
			l->empty_runs[r->cls]++;
		}
	}
	pthread_mutex_unlock(&l->lock);
}

bool pool_resize(void *ptr, size_t size)
{
	char *p = ptr;
	struct run *r = check_slot(p, "cloak_secret_realloc");
	uint32_t field = ((struct slot_header *)p - 1)->size;
	size_t old = field & HEADER_SIZE_MASK;
	if (size > classes[r->cls].usable)
		return false;
	if (size < old)
		memset(p + size, 0, old - size + 8); /* the dropped bytes are secret too */
	else
		memset(p + old, 0, 8);
	write_header(p, size, field & HEADER_MARK);
	struct lane *l = &lanes[r->lane];
	pthread_mutex_lock(&l->lock);
	STORE(l->live_bytes, l->live_bytes + (uint64_t)((int64_t)size - (int64_t)old));
	pthread_mutex_unlock(&l->lock);
	return true;
}

size_t pool_size(const void *p)
{
	check_slot(p, "cloak_secret_usable_size");
	return ((const struct slot_header *)p - 1)->size & HEADER_SIZE_MASK;
}

size_t pool_slot_usable(const void *p)
{
	return classes[check_slot(p, "cloak_secret_usable_size")->cls].usable;
}

bool pool_marked(const void *p)
{
	check_slot(p, "CRYPTO_secure_allocated");
	return ((const struct slot_header *)p - 1)->size & HEADER_MARK;
}

/* ---- giving memory back ---- */

bool pool_busy(void)
{
	return __atomic_load_n(&busy_lanes, __ATOMIC_RELAXED) != 0;
}

static void lock_all(void)
{
	for (unsigned i = 0; i < MAX_LANES; i++)
		pthread_mutex_lock(&lanes[i].lock);
	pthread_mutex_lock(&arena_lock);
}

static void unlock_all(void)
{
	pthread_mutex_unlock(&arena_lock);
	for (unsigned i = MAX_LANES; i-- > 0;)
		pthread_mutex_unlock(&lanes[i].lock);
}

/* Forgets every run and arena (their memory is gone or about to go); call
 * with every lock held, or in a child. */
static void forget_all(bool unmap)
{
	for (unsigned i = 0; i < MAX_LANES; i++)
		for (unsigned c = 0; c < NUM_CLASSES; c++) {
			for (struct run *r = lanes[i].runs[c], *next; r; r = next) {
				next = r->next;
				free(r);
			}
			lanes[i].runs[c] = NULL;
			lanes[i].empty_runs[c] = 0;
		}
	while (arenas) {
		struct arena *a = arenas;
		if (unmap) {
			arena_unmap(a);
		} else {
			arenas = a->next;
			free(a);
		}
	}
	STORE(arena_count, 0);
	STORE(arena_bytes, 0);
	spare_arenas = 0;
}

bool pool_release_idle(void)
{
	lock_all();
	bool idle = true;
	for (unsigned i = 0; i < MAX_LANES; i++)
		idle &= lanes[i].live == 0;
	if (idle && arenas) {
		forget_all(true);
		STORE(releases, releases + 1);
	}
	unlock_all();
	return idle;
}

void pool_trim(void)
{
	for (unsigned i = 0; i < MAX_LANES; i++)
		pthread_mutex_lock(&lanes[i].lock);
	for (unsigned i = 0; i < MAX_LANES; i++)
		for (unsigned c = 0; c < NUM_CLASSES; c++)
			for (struct run *r = lanes[i].runs[c], *next; r; r = next) {
				next = r->next;
				if (!r->live) {
					list_remove(&lanes[i], r);
					lanes[i].empty_runs[c]--;
					run_retire(r);
				}
			}
	pthread_mutex_lock(&arena_lock);
	for (struct arena *a = arenas, *next; a; a = next) {
		next = a->next;
		if (a->free_pages == a->pages)
			arena_unmap(a);
	}
	spare_arenas = 0;
	unlock_all();
}

void pool_counts(struct pool_counts *out)
{
	memset(out, 0, sizeof *out);
	for (unsigned i = 0; i < MAX_LANES; i++) {
		out->allocs += LOAD(lanes[i].allocs);
		out->frees += LOAD(lanes[i].frees);
		out->live += LOAD(lanes[i].live);
		out->live_bytes += LOAD(lanes[i].live_bytes);
	}
	out->arenas = LOAD(arena_count);
	out->releases = LOAD(releases);
}

void pool_init(void)
{
	classes_init();
	for (unsigned i = 0; i < MAX_LANES; i++)
		pthread_mutex_init(&lanes[i].lock, NULL);
	/* A lane per CPU, up to twice that many threads without contention;
	 * one lane when the lock limit is small, so that threads share runs. */
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned n = cpus > 0 ? (unsigned)cpus * 2 : 1;
	if (n > MAX_LANES)
		n = MAX_LANES;
	if (backend_memlock_limit() < ((uint64_t)1 << 20))
		n = 1;
	STORE(lane_count, n);
}

/* ---- fork ---- */

void pool_fork_prepare(void)
{
	lock_all();
}

void pool_fork_parent(void)
{
	unlock_all();
}

/* COPY: the runs and arenas stay as they were (the locks were held, so they
 * are consistent) and backend.c gives the child its copy of their pages.
 * DROP: the memory is not here; forget it (backend.c keeps the addresses
 * reserved). Threads other than this one do not exist in the child; their
 * lanes stay for threads the child creates. */
void pool_fork_child(int fork_mode)
{
	if (fork_mode != CLOAK_SECRET_FORK_COPY) {
		forget_all(false);
		for (unsigned i = 0; i < MAX_LANES; i++) {
			lanes[i].live = lanes[i].live_bytes = 0;
			lanes[i].allocs = lanes[i].frees = 0;
		}
		busy_lanes = 0;
		releases = 0;
	}
	for (unsigned i = 0; i < MAX_LANES; i++)
		pthread_mutex_init(&lanes[i].lock, NULL);
	pthread_mutex_init(&arena_lock, NULL);
}

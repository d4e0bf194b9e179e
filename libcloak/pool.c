/*
 * The pooled allocator: small secrets (up to 64 KiB) in slots carved from
 * 2 MiB secret arenas, so a 32-byte key costs a 48-byte slot rather than a
 * page, and the kernel's direct map is split per arena rather than per secret.
 *
 * Slot layout (slot size = usable + 16, a multiple of 16; slots start at
 * 8 mod 16 so the data is 16-aligned):
 *     [8-byte header: size, keyed tag][data: usable bytes][8 bytes]
 * A keyed 8-byte canary is written right after the requested size. A free
 * slot holds zeroes except its header (the FREE tag) and a free-list link in
 * its first 8 data bytes, so allocations come back zeroed.
 *
 * Concurrency: each thread keeps a free list per size class (its cache) and
 * allocates and frees there without locks; only refills and flushes, in
 * batches, take the class's depot lock, and only new runs take the arena lock
 * (lock order: depot, then arena). Counters are per thread, summed on demand.
 *
 * Arenas are 2 MiB-aligned; a bitmap over the address space (one bit per
 * 2 MiB, reserved lazily) tells pooled pointers from others in one load.
 */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define SMALL_CLASSES 8  /* usable 16, 32, ..., 128 */
#define STEPS_PER_DOUBLING 4
#define NUM_CLASSES (SMALL_CLASSES + STEPS_PER_DOUBLING * 9) /* up to 64 KiB */
#define ARENA_PAGES (ARENA_SIZE / PAGE_SIZE_BYTES)
#define ADDR_BITS 47
#define BITMAP_WORDS (((size_t)1 << (ADDR_BITS - 21)) / 64)
#define ARENA_MAGIC 0x636c6f616b41524eull

_Static_assert(NUM_CLASSES <= 255, "page_class is a byte");

struct arena {
	uint64_t magic;
	uint32_t next_page; /* first page not yet given to a run */
	uint8_t page_class[ARENA_PAGES];
};

struct class_info {
	uint32_t usable, slot, run_bytes, batch;
};
static struct class_info classes[NUM_CLASSES];

struct depot {
	pthread_mutex_t lock;
	void *head;          /* free slots returned by threads */
	char *bump, *bump_end; /* the unused part of the class's current run */
} __attribute__((aligned(64)));
static struct depot depots[NUM_CLASSES];

static pthread_mutex_t arena_lock = PTHREAD_MUTEX_INITIALIZER;
static struct arena *current_arena;
static uint64_t *arena_bits;

struct bin {
	void *head;
	uint32_t count;
};
struct tcache {
	struct bin bins[NUM_CLASSES];
	/* Written by the owner thread only, read by pool_collect. */
	uint64_t allocs, frees;
	int64_t live, live_bytes;
	struct tcache *next, *prev;
};
static __thread struct tcache *tls_cache __attribute__((tls_model("initial-exec")));
static pthread_key_t cache_key;
static pthread_mutex_t caches_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tcache *caches;
/* Counters of threads that have exited. */
static uint64_t dead_allocs, dead_frees;
static int64_t dead_live, dead_live_bytes;

#define RELAXED_ADD(field, v) \
	__atomic_store_n(&(field), __atomic_load_n(&(field), __ATOMIC_RELAXED) + (v), __ATOMIC_RELAXED)

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
	cloak_init(); /* the table is filled in there */
	return cls < NUM_CLASSES ? classes[cls].usable : 0;
}

unsigned pool_class_count(void)
{
	return NUM_CLASSES;
}

static void classes_init(void)
{
	for (unsigned c = 0; c < NUM_CLASSES; c++) {
		size_t usable;
		if (c < SMALL_CLASSES) {
			usable = 16 * (c + 1);
		} else {
			unsigned k = c - SMALL_CLASSES;
			size_t base = (size_t)128 << (k / STEPS_PER_DOUBLING);
			usable = base + (k % STEPS_PER_DOUBLING + 1) * base / STEPS_PER_DOUBLING;
		}
		size_t slot = usable + 16;
		size_t run = (8 + 4 * slot + PAGE_SIZE_BYTES - 1) & ~(size_t)(PAGE_SIZE_BYTES - 1);
		if (run < 64 * 1024)
			run = 64 * 1024;
		size_t batch = 16384 / slot;
		batch = batch < 2 ? 2 : batch > 64 ? 64 : batch;
		classes[c] = (struct class_info){ (uint32_t)usable, (uint32_t)slot, (uint32_t)run,
			                          (uint32_t)batch };
		pthread_mutex_init(&depots[c].lock, NULL);
	}
}

/* ---- arenas ---- */

bool pool_owns(const void *p)
{
	uintptr_t a = (uintptr_t)p;
	if (!arena_bits || a >> ADDR_BITS)
		return false;
	uintptr_t idx = a >> 21;
	return (__atomic_load_n(&arena_bits[idx / 64], __ATOMIC_RELAXED) >> (idx % 64)) & 1;
}

static void reserve_bitmap(void)
{
	void *m = mmap(NULL, BITMAP_WORDS * 8, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		cloak_die("cannot reserve the 8 MiB arena bitmap: %s", strerror(errno));
	/* Not secret, but 8 MiB of zeroes have no place in core dumps. */
	madvise(m, BITMAP_WORDS * 8, MADV_DONTDUMP);
	arena_bits = m;
}

/* Gives a fresh run of `*bytes` to class `cls`; called with the depot held.
 * When the current arena has fewer pages left but still room for a few of
 * the class's slots, the run is that tail, so arenas end up nearly full;
 * `*bytes` is then the shorter length. */
static char *new_run(unsigned cls, size_t *bytes)
{
	size_t pages = *bytes / PAGE_SIZE_BYTES;
	size_t min_pages = (8 + 4 * (size_t)classes[cls].slot + PAGE_SIZE_BYTES - 1) / PAGE_SIZE_BYTES;
	pthread_mutex_lock(&arena_lock);
	struct arena *a = current_arena;
	if (a && a->next_page + pages > ARENA_PAGES && a->next_page + min_pages <= ARENA_PAGES)
		pages = ARENA_PAGES - a->next_page;
	if (!a || a->next_page + pages > ARENA_PAGES) {
		a = (struct arena *)backend_map(ARENA_SIZE, ARENA_SIZE, 0);
		if (!a) {
			pthread_mutex_unlock(&arena_lock);
			return NULL;
		}
		a->magic = ARENA_MAGIC;
		a->next_page = (sizeof *a + PAGE_SIZE_BYTES - 1) / PAGE_SIZE_BYTES;
		uintptr_t idx = (uintptr_t)a >> 21;
		__atomic_fetch_or(&arena_bits[idx / 64], 1ull << (idx % 64), __ATOMIC_RELEASE);
		__atomic_fetch_add(&cloak_counters.arenas, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&cloak_counters.arena_bytes, ARENA_SIZE, __ATOMIC_RELAXED);
		current_arena = a;
	}
	char *run = (char *)a + (size_t)a->next_page * PAGE_SIZE_BYTES;
	memset(&a->page_class[a->next_page], (int)cls, pages);
	a->next_page += (uint32_t)pages;
	pthread_mutex_unlock(&arena_lock);
	*bytes = pages * PAGE_SIZE_BYTES;
	return run;
}

static inline unsigned class_of_slot(const void *p)
{
	const struct arena *a = (const struct arena *)((uintptr_t)p & ~(uintptr_t)(ARENA_SIZE - 1));
	return a->page_class[((uintptr_t)p - (uintptr_t)a) / PAGE_SIZE_BYTES];
}

/* ---- thread caches ---- */

static void cache_flush(struct tcache *tc, unsigned cls, uint32_t n)
{
	struct bin *b = &tc->bins[cls];
	if (!n)
		return;
	void *first = b->head, *last = first;
	for (uint32_t i = 1; i < n; i++)
		last = *(void **)last;
	b->head = *(void **)last;
	b->count -= n;
	struct depot *d = &depots[cls];
	pthread_mutex_lock(&d->lock);
	*(void **)last = d->head;
	d->head = first;
	pthread_mutex_unlock(&d->lock);
}

static void cache_destroy(void *arg)
{
	struct tcache *tc = arg;
	for (unsigned c = 0; c < NUM_CLASSES; c++)
		cache_flush(tc, c, tc->bins[c].count);
	pthread_mutex_lock(&caches_lock);
	dead_allocs += tc->allocs;
	dead_frees += tc->frees;
	dead_live += tc->live;
	dead_live_bytes += tc->live_bytes;
	if (tc->prev)
		tc->prev->next = tc->next;
	else
		caches = tc->next;
	if (tc->next)
		tc->next->prev = tc->prev;
	pthread_mutex_unlock(&caches_lock);
	tls_cache = NULL;
	free(tc);
}

static struct tcache *cache_create(void)
{
	cloak_init();
	struct tcache *tc = calloc(1, sizeof *tc);
	if (!tc) {
		set_last_error("cannot allocate a thread cache");
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&caches_lock);
	tc->next = caches;
	if (caches)
		caches->prev = tc;
	caches = tc;
	pthread_mutex_unlock(&caches_lock);
	pthread_setspecific(cache_key, tc);
	tls_cache = tc;
	return tc;
}

/* Fills the thread's bin with up to a batch of slots from the depot, carving
 * new ones (and new runs) when the depot is empty. */
static bool cache_refill(struct tcache *tc, unsigned cls)
{
	const struct class_info *ci = &classes[cls];
	struct depot *d = &depots[cls];
	struct bin *b = &tc->bins[cls];
	uint32_t got = 0;
	pthread_mutex_lock(&d->lock);
	while (got < ci->batch && d->head) {
		void *p = d->head;
		d->head = *(void **)p;
		*(void **)p = b->head;
		b->head = p;
		got++;
	}
	while (got < ci->batch) {
		if (!d->bump || (size_t)(d->bump_end - d->bump) < ci->slot) {
			if (got)
				break;
			size_t run_bytes = ci->run_bytes;
			char *run = new_run(cls, &run_bytes);
			if (!run) {
				pthread_mutex_unlock(&d->lock);
				return false;
			}
			d->bump = run + 8;
			d->bump_end = run + run_bytes;
		}
		void *p = d->bump + 8; /* fresh secret memory is zero */
		d->bump += ci->slot;
		*(void **)p = b->head;
		b->head = p;
		got++;
	}
	pthread_mutex_unlock(&d->lock);
	b->count += got;
	return true;
}

void *pool_alloc(size_t size)
{
	unsigned cls = pool_class_of(size);
	struct tcache *tc = tls_cache;
	if (CLOAK_UNLIKELY(!tc) && !(tc = cache_create()))
		return NULL;
	struct bin *b = &tc->bins[cls];
	if (CLOAK_UNLIKELY(!b->head) && !cache_refill(tc, cls))
		return NULL;
	char *p = b->head;
	b->head = *(void **)p;
	b->count--;
	*(void **)p = NULL;
	struct slot_header *h = (struct slot_header *)p - 1;
	h->size = (uint32_t)size;
	h->tag = header_tag(p, (uint32_t)size, TAG_POOLED);
	uint64_t c = canary_value(p, size);
	memcpy(p + size, &c, sizeof c);
	RELAXED_ADD(tc->allocs, 1);
	RELAXED_ADD(tc->live, 1);
	RELAXED_ADD(tc->live_bytes, (int64_t)size);
	return p;
}

/* Checks the header and canary of a live pooled slot; returns its usable size. */
static size_t check_slot(const char *p, const char *op)
{
	const struct slot_header *h = (const struct slot_header *)p - 1;
	uint32_t size = h->size;
	if (CLOAK_UNLIKELY(h->tag != header_tag(p, size, TAG_POOLED))) {
		if (size == HEADER_FREE_SIZE && h->tag == header_tag(p, size, TAG_FREE))
			cloak_die("double free: %s(%p) on a secret that was already freed", op, (void *)p);
		cloak_die("heap underflow or invalid pointer: the header before %p is damaged "
		          "(%s); something wrote before the start of this secret",
		          (void *)p, op);
	}
	size_t usable = classes[class_of_slot(p)].usable;
	if (CLOAK_UNLIKELY(size > usable))
		cloak_die("heap corruption: %s(%p) found size %u in a %zu-byte slot", op, (void *)p,
		          size, usable);
	uint64_t c;
	memcpy(&c, p + size, sizeof c);
	if (CLOAK_UNLIKELY(c != canary_value(p, size)))
		cloak_die("heap overflow: %s(%p) found the canary after this %u-byte secret "
		          "overwritten; something wrote past its end",
		          op, (void *)p, size);
	return usable;
}

void pool_free(void *ptr)
{
	char *p = ptr;
	size_t size = ((struct slot_header *)p - 1)->size;
	size_t usable = check_slot(p, "cloak_secret_free");
	unsigned cls = class_of_slot(p);
	memset(p, 0, usable + 8);
	struct slot_header *h = (struct slot_header *)p - 1;
	h->size = HEADER_FREE_SIZE;
	h->tag = header_tag(p, HEADER_FREE_SIZE, TAG_FREE);
	struct tcache *tc = tls_cache;
	if (CLOAK_UNLIKELY(!tc) && !(tc = cache_create()))
		cloak_die("cannot create a thread cache to free %p", ptr);
	struct bin *b = &tc->bins[cls];
	*(void **)p = b->head;
	b->head = p;
	b->count++;
	RELAXED_ADD(tc->frees, 1);
	RELAXED_ADD(tc->live, -1);
	RELAXED_ADD(tc->live_bytes, -(int64_t)size);
	if (CLOAK_UNLIKELY(b->count > 2 * classes[cls].batch))
		cache_flush(tc, cls, classes[cls].batch);
}

bool pool_resize(void *ptr, size_t size)
{
	char *p = ptr;
	size_t old = ((struct slot_header *)p - 1)->size;
	size_t usable = check_slot(p, "cloak_secret_realloc");
	if (size > usable)
		return false;
	if (size < old)
		memset(p + size, 0, old - size + 8); /* the dropped bytes are secret too */
	else
		memset(p + old, 0, 8);
	struct slot_header *h = (struct slot_header *)p - 1;
	h->size = (uint32_t)size;
	h->tag = header_tag(p, (uint32_t)size, TAG_POOLED);
	uint64_t c = canary_value(p, size);
	memcpy(p + size, &c, sizeof c);
	struct tcache *tc = tls_cache;
	if (tc)
		RELAXED_ADD(tc->live_bytes, (int64_t)size - (int64_t)old);
	else
		__atomic_fetch_add(&dead_live_bytes, (int64_t)size - (int64_t)old, __ATOMIC_RELAXED);
	return true;
}

size_t pool_size(const void *p)
{
	check_slot(p, "cloak_secret_usable_size");
	return ((const struct slot_header *)p - 1)->size;
}

void pool_collect(uint64_t *allocs, uint64_t *frees, int64_t *live, int64_t *live_bytes)
{
	pthread_mutex_lock(&caches_lock);
	uint64_t a = dead_allocs, f = dead_frees;
	int64_t l = dead_live, lb = __atomic_load_n(&dead_live_bytes, __ATOMIC_RELAXED);
	for (struct tcache *tc = caches; tc; tc = tc->next) {
		a += __atomic_load_n(&tc->allocs, __ATOMIC_RELAXED);
		f += __atomic_load_n(&tc->frees, __ATOMIC_RELAXED);
		l += __atomic_load_n(&tc->live, __ATOMIC_RELAXED);
		lb += __atomic_load_n(&tc->live_bytes, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&caches_lock);
	*allocs = a, *frees = f, *live = l, *live_bytes = lb;
}

void pool_init(void)
{
	classes_init();
	reserve_bitmap();
	if (pthread_key_create(&cache_key, cache_destroy) != 0)
		cloak_die("pthread_key_create failed: too many thread-specific keys in this process");
}

/* ---- fork ---- */

void pool_atfork_prepare(void)
{
	pthread_mutex_lock(&caches_lock);
	for (unsigned c = 0; c < NUM_CLASSES; c++)
		pthread_mutex_lock(&depots[c].lock);
	pthread_mutex_lock(&arena_lock);
}

void pool_atfork_parent(void)
{
	pthread_mutex_unlock(&arena_lock);
	for (unsigned c = NUM_CLASSES; c-- > 0;)
		pthread_mutex_unlock(&depots[c].lock);
	pthread_mutex_unlock(&caches_lock);
}

/* The arenas were not inherited (MADV_DONTFORK): forget them, and every
 * cached slot in them, so the child starts with an empty pool. */
void pool_atfork_child(void)
{
	if (mmap(arena_bits, BITMAP_WORDS * 8, PROT_READ | PROT_WRITE,
	         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0) == MAP_FAILED)
		cloak_die("cannot reset the arena bitmap after fork: %s", strerror(errno));
	madvise(arena_bits, BITMAP_WORDS * 8, MADV_DONTDUMP);
	current_arena = NULL;
	for (unsigned c = 0; c < NUM_CLASSES; c++) {
		depots[c].head = NULL;
		depots[c].bump = depots[c].bump_end = NULL;
		pthread_mutex_init(&depots[c].lock, NULL);
	}
	/* Other threads do not exist in the child; their caches are dropped. */
	struct tcache *self = tls_cache;
	for (struct tcache *tc = caches, *next; tc; tc = next) {
		next = tc->next;
		if (tc != self)
			free(tc);
	}
	caches = self;
	if (self) {
		memset(self, 0, sizeof *self);
	}
	dead_allocs = dead_frees = 0;
	dead_live = dead_live_bytes = 0;
	pthread_mutex_init(&arena_lock, NULL);
	pthread_mutex_init(&caches_lock, NULL);
}

/*
 * Allocations on their own secret pages between two PROT_NONE guard pages:
 * cloak_secret_alloc_guarded(), requests above the pooled maximum, and every
 * allocation in guard-all debug mode. They can be protected with
 * cloak_secret_protect(), so their bookkeeping lives outside them, in a hash
 * table keyed by the user pointer (slow path: one mutex).
 *
 * Layout:  [guard][ ... header | data (end at page end, or 16-aligned with a
 *          canary in the slack) ][guard]
 */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define BUCKETS 4096

struct mapping {
	char *user;
	size_t size, rounded;
	char *secret;
	size_t secret_len;
	int mode;
	struct mapping *next;
};

static pthread_mutex_t map_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mapping *buckets[BUCKETS];

static inline struct mapping **bucket_of(const void *p)
{
	return &buckets[mix64((uintptr_t)p) % BUCKETS];
}

/* Call with map_lock held. */
static struct mapping **find_locked(const void *p)
{
	struct mapping **m = bucket_of(p);
	while (*m && (*m)->user != p)
		m = &(*m)->next;
	return m;
}

static inline uint8_t slack_byte(const char *user, size_t size, size_t i)
{
	return (uint8_t)(canary_value(user, size) >> (8 * (i % 8)));
}

void *mapped_alloc(size_t size, size_t align)
{
	if (size > SIZE_MAX / 4) {
		set_last_error("cannot allocate %zu bytes: too large", size);
		errno = ENOMEM;
		return NULL;
	}
	size_t rounded = (size + align - 1) & ~(align - 1);
	size_t secret_len = (rounded + sizeof(struct slot_header) + PAGE_SIZE_BYTES - 1) &
	                    ~(size_t)(PAGE_SIZE_BYTES - 1);
	struct mapping *m = malloc(sizeof *m);
	if (!m) {
		set_last_error("cannot allocate bookkeeping for a guarded secret");
		errno = ENOMEM;
		return NULL;
	}
	char *secret = backend_map(secret_len, PAGE_SIZE_BYTES, PAGE_SIZE_BYTES);
	if (!secret) {
		free(m);
		return NULL;
	}
	char *user = secret + secret_len - rounded;
	/* The header is unaligned when the data ends exactly at the page end. */
	struct slot_header h = { (uint32_t)size, header_tag(user, (uint32_t)size, TAG_MAPPED) };
	memcpy(user - sizeof h, &h, sizeof h);
	for (size_t i = size; i < rounded; i++)
		user[i] = (char)slack_byte(user, size, i);
	*m = (struct mapping){ user, size, rounded, secret, secret_len, CLOAK_READWRITE, NULL };
	pthread_mutex_lock(&map_lock);
	struct mapping **b = bucket_of(user);
	m->next = *b;
	*b = m;
	__atomic_fetch_add(&cloak_counters.mapped_allocs, 1, __ATOMIC_RELAXED);
	cloak_counters.mapped_total_allocs++;
	__atomic_fetch_add(&cloak_counters.mapped_bytes, secret_len, __ATOMIC_RELAXED);
	cloak_counters.mapped_requested += size;
	pthread_mutex_unlock(&map_lock);
	return user;
}

bool mapped_free(void *p)
{
	pthread_mutex_lock(&map_lock);
	struct mapping **link = find_locked(p), *m = *link;
	if (m) {
		*link = m->next;
		__atomic_fetch_sub(&cloak_counters.mapped_allocs, 1, __ATOMIC_RELAXED);
		cloak_counters.mapped_total_frees++;
		__atomic_fetch_sub(&cloak_counters.mapped_bytes, m->secret_len, __ATOMIC_RELAXED);
		cloak_counters.mapped_requested -= m->size;
	}
	pthread_mutex_unlock(&map_lock);
	if (!m)
		return false;
	if (m->mode != CLOAK_READWRITE && mprotect(m->secret, m->secret_len, PROT_READ | PROT_WRITE))
		cloak_die("cannot make %p writable to free it: %s", p, strerror(errno));
	struct slot_header h;
	memcpy(&h, m->user - sizeof h, sizeof h);
	if (h.size != (uint32_t)m->size || h.tag != header_tag(m->user, (uint32_t)m->size, TAG_MAPPED))
		cloak_die("heap underflow: cloak_secret_free(%p) found the header before this guarded "
		          "secret damaged; something wrote before its start", p);
	for (size_t i = m->size; i < m->rounded; i++)
		if ((uint8_t)m->user[i] != slack_byte(m->user, m->size, i))
			cloak_die("heap overflow: cloak_secret_free(%p) found the canary after this "
			          "%zu-byte secret overwritten; something wrote past its end", p, m->size);
	/* memfd_secret pages are zeroed by the kernel when freed; the mlock
	 * fallback's are not, so wipe the secret either way. */
	explicit_bzero(m->user, m->size);
	backend_unmap(m->secret, m->secret_len, PAGE_SIZE_BYTES);
	free(m);
	return true;
}

bool mapped_owns(const void *p)
{
	/* The OpenSSL front end asks this on every CRYPTO_free: skip the lock
	 * while there are no mapped allocations at all. */
	if (!__atomic_load_n(&cloak_counters.mapped_allocs, __ATOMIC_RELAXED))
		return false;
	pthread_mutex_lock(&map_lock);
	bool found = *find_locked(p) != NULL;
	pthread_mutex_unlock(&map_lock);
	return found;
}

size_t mapped_size(const void *p)
{
	pthread_mutex_lock(&map_lock);
	struct mapping *m = *find_locked(p);
	size_t size = m ? m->size : SIZE_MAX;
	pthread_mutex_unlock(&map_lock);
	return size;
}

int mapped_protect(void *p, int mode)
{
	static const int prot[] = { [CLOAK_NOACCESS] = PROT_NONE, [CLOAK_READONLY] = PROT_READ,
		                    [CLOAK_READWRITE] = PROT_READ | PROT_WRITE };
	pthread_mutex_lock(&map_lock);
	struct mapping *m = *find_locked(p);
	int rc = -1;
	if (!m) {
		set_last_error("cloak_secret_protect(%p): not a guarded allocation (pooled secrets "
		               "share pages; use cloak_secret_alloc_guarded)", p);
		errno = EINVAL;
	} else if (mprotect(m->secret, m->secret_len, prot[mode]) == 0) {
		m->mode = mode;
		rc = 0;
	}
	pthread_mutex_unlock(&map_lock);
	return rc;
}

void mapped_atfork_prepare(void)
{
	pthread_mutex_lock(&map_lock);
}

void mapped_atfork_parent(void)
{
	pthread_mutex_unlock(&map_lock);
}

/* The secret pages stayed with the parent; release the guard pages the child
 * did inherit and forget the allocations. */
void mapped_atfork_child(void)
{
	for (size_t i = 0; i < BUCKETS; i++) {
		for (struct mapping *m = buckets[i], *next; m; m = next) {
			next = m->next;
			backend_unmap(m->secret, m->secret_len, PAGE_SIZE_BYTES);
			free(m);
		}
		buckets[i] = NULL;
	}
	pthread_mutex_init(&map_lock, NULL);
}

/* SPDX-License-Identifier: ISC */
/*
 * Where libcloak's memory comes from, and what a forked child gets of it; see
 * backend.h. memfd_secret is the only backend unless the program accepted
 * the documented fallback (mlock + MADV_DONTDUMP + MADV_DONTFORK) through
 * CLOAK_FALLBACK=mlock or cloak_secret_set_policy(): libcloak never hands out
 * weaker memory silently.
 */
#include "backend.h"
#include "secretmem.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

struct secret_map **backend_table[TABLE_L1_SIZE];
struct secret_map backend_dropped;

static pthread_mutex_t backend_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct secret_map *maps; /* every live mapping, under backend_mutex */
static uint64_t mapped_bytes, map_count; /* written under the mutex, read atomically */
static unsigned secretmem_files;
/* While fork() runs: the memfd_secret file the child copies from. */
static int staging_fd = -1;

#define L2_ENTRIES ((size_t)1 << TABLE_L2_BITS)

/* The copy for a forked child reads secrets while other threads of the
 * parent may be writing their own (as fork's snapshot of any memory does):
 * ThreadSanitizer is told not to count those reads as races. */
#if defined(__SANITIZE_THREAD__)
#define CLOAK_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CLOAK_TSAN 1
#endif
#endif
#ifdef CLOAK_TSAN
void __tsan_ignore_thread_begin(void);
void __tsan_ignore_thread_end(void);
#define SNAPSHOT_BEGIN() __tsan_ignore_thread_begin()
#define SNAPSHOT_END() __tsan_ignore_thread_end()
#else
#define SNAPSHOT_BEGIN() ((void)0)
#define SNAPSHOT_END() ((void)0)
#endif

int backend_current(void)
{
	if (!CFG_LOAD(force_no_secretmem) && secretmem_supported())
		return CLOAK_SECRET_BACKEND_SECRETMEM;
	if (CFG_LOAD(policy) == CLOAK_SECRET_POLICY_ALLOW_MLOCK_FALLBACK)
		return CLOAK_SECRET_BACKEND_MLOCK;
	return CLOAK_SECRET_BACKEND_NONE;
}

uint64_t backend_memlock_limit(void)
{
	struct memlock_info mi;
	memlock_query(&mi);
	return mi.cap_ipc_lock ? UINT64_MAX : mi.soft;
}

/* ---- the address table ---- */

/* Points every region of m's reservation at `value`; false if a second-level
 * table cannot be had. Call with backend_mutex held. */
static bool table_set(const struct secret_map *m, struct secret_map *value)
{
	uintptr_t first = (uintptr_t)m->resv >> REGION_SHIFT;
	uintptr_t last = ((uintptr_t)m->resv + m->resv_len - 1) >> REGION_SHIFT;
	for (uintptr_t r = first; r <= last; r++) {
		struct secret_map ***slot = &backend_table[r >> TABLE_L2_BITS];
		struct secret_map **l2 = *slot;
		if (!l2) {
			void *t = mmap(NULL, L2_ENTRIES * sizeof *l2, PROT_READ | PROT_WRITE,
			               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (t == MAP_FAILED)
				return false;
			madvise(t, L2_ENTRIES * sizeof *l2, MADV_DONTDUMP); /* addresses only */
			l2 = t;
			__atomic_store_n(slot, l2, __ATOMIC_RELEASE);
		}
		__atomic_store_n(&l2[r & (L2_ENTRIES - 1)], value, __ATOMIC_RELEASE);
	}
	return true;
}

/* ---- mapping ---- */

static void explain_failure(size_t len, int err)
{
	struct memlock_info mi;
	memlock_query(&mi);
	uint64_t held = __atomic_load_n(&mapped_bytes, __ATOMIC_RELAXED);
	if (err == EAGAIN || err == EPERM || (err == ENOMEM && !mi.cap_ipc_lock)) {
		char limit[32];
		if (mi.soft == UINT64_MAX)
			snprintf(limit, sizeof limit, "unlimited");
		else
			snprintf(limit, sizeof limit, "%llu KiB", (unsigned long long)(mi.soft >> 10));
		set_last_error("RLIMIT_MEMLOCK exhausted: cannot lock %zu KiB more secret memory "
		               "(limit %s, libcloak holds %llu KiB); raise it with `ulimit -l` "
		               "or run with CAP_IPC_LOCK",
		               len >> 10, limit, (unsigned long long)(held >> 10));
		errno = EAGAIN;
	} else {
		set_last_error("cannot map %zu KiB of secret memory: %s", len >> 10, strerror(err));
		errno = ENOMEM;
	}
}

/* mlock goes through syscall() because sanitizer runtimes make mlock() a
 * no-op. */
static int lock_pages(char *p, size_t len)
{
	return (int)syscall(SYS_mlock, p, len);
}

static bool map_fallback(char *p, size_t len)
{
	if (mmap(p, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
	    MAP_FAILED)
		return false;
	/* Never weaker than promised: each step must succeed. */
	return madvise(p, len, MADV_DONTDUMP) == 0 && madvise(p, len, MADV_DONTFORK) == 0 &&
	       lock_pages(p, len) == 0;
}

/* A memfd_secret file of `len` bytes mapped at p (which the caller owns),
 * MADV_DONTFORK, its first `populate` bytes faulted in (secretmem_populate:
 * a page the lock limit does not allow fails the mapping with EAGAIN here,
 * instead of a SIGBUS at its first store). With `noreplace`, p must be
 * unmapped (a forked child refilling the hole its parent's mapping left). */
static bool map_secretmem(char *p, size_t len, bool noreplace, size_t populate)
{
	int fd = secretmem_fd();
	if (fd < 0)
		return false;
	void *q = MAP_FAILED;
	if (ftruncate(fd, (off_t)len) == 0)
		q = mmap(p, len, PROT_READ | PROT_WRITE,
		         MAP_SHARED | (noreplace ? MAP_FIXED_NOREPLACE : MAP_FIXED), fd, 0);
	int e = errno;
	close(fd);
	if (q != MAP_FAILED && q != p) { /* a kernel older than MAP_FIXED_NOREPLACE */
		munmap(q, len);
		q = MAP_FAILED;
		e = EEXIST;
	}
	if (q == MAP_FAILED || madvise(p, len, MADV_DONTFORK) != 0 ||
	    secretmem_populate(p, populate) != 0) {
		if (q != MAP_FAILED) {
			e = errno;
			munmap(p, len);
		}
		errno = e;
		return false;
	}
	return true;
}

/* PROT_NONE address space of `len` (a multiple of REGION_SIZE) aligned to
 * REGION_SIZE. */
static char *reserve(size_t len)
{
	size_t over = len + REGION_SIZE;
	char *r = mmap(NULL, over, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (r == MAP_FAILED)
		return NULL;
	char *p = (char *)(((uintptr_t)r + REGION_SIZE - 1) & ~(uintptr_t)(REGION_SIZE - 1));
	if (p > r)
		munmap(r, (size_t)(p - r));
	if (r + over > p + len)
		munmap(p + len, (size_t)(r + over - (p + len)));
	if ((uintptr_t)p + len > (uintptr_t)1 << 47) { /* outside the address table */
		munmap(p, len);
		return NULL;
	}
	return p;
}

struct secret_map *backend_map(size_t len, size_t lead, bool guard, enum map_kind kind,
                               void *owner)
{
	int backend = backend_current();
	if (backend == CLOAK_SECRET_BACKEND_NONE) {
		set_last_error("memfd_secret is not available on this kernel and the policy refuses "
		               "weaker memory; set CLOAK_FALLBACK=mlock (or call cloak_secret_set_policy"
		               "(CLOAK_SECRET_POLICY_ALLOW_MLOCK_FALLBACK)) to accept mlocked memory");
		errno = ENOMEM;
		return NULL;
	}
	size_t need = lead + len + (guard ? PAGE_SIZE_BYTES : 0);
	if (len > ((size_t)1 << 46) || need > ((size_t)1 << 46)) {
		set_last_error("cannot allocate %zu bytes: too large", len);
		errno = ENOMEM;
		return NULL;
	}
	struct secret_map *m = calloc(1, sizeof *m);
	if (!m) {
		set_last_error("cannot allocate bookkeeping for secret memory");
		errno = ENOMEM;
		return NULL;
	}
	m->resv_len = (need + REGION_SIZE - 1) & ~(REGION_SIZE - 1);
	m->resv = reserve(m->resv_len);
	if (!m->resv) {
		set_last_error("cannot reserve %zu KiB of address space: %s", m->resv_len >> 10,
		               strerror(errno));
		free(m);
		errno = ENOMEM;
		return NULL;
	}
	m->base = m->resv + lead;
	m->len = len;
	m->prot = PROT_READ | PROT_WRITE;
	m->backend = backend;
	m->kind = kind;
	m->owner = owner;
	/* mlock faults every page in; an arena's secret pages wait for
	 * backend_populate. */
	m->populated = backend == CLOAK_SECRET_BACKEND_MLOCK || kind != MAP_KIND_ARENA ? len : 0;
	bool ok = backend == CLOAK_SECRET_BACKEND_SECRETMEM
	                  ? map_secretmem(m->base, len, false, m->populated)
	                  : map_fallback(m->base, len);
	if (!ok) {
		int err = errno;
		munmap(m->resv, m->resv_len);
		free(m);
		explain_failure(len, err);
		return NULL;
	}
	pthread_mutex_lock(&backend_mutex);
	if (!table_set(m, m)) {
		pthread_mutex_unlock(&backend_mutex);
		munmap(m->resv, m->resv_len);
		free(m);
		set_last_error("cannot allocate libcloak's address table");
		errno = ENOMEM;
		return NULL;
	}
	DLIST_PUSH(maps, m);
	__atomic_store_n(&mapped_bytes, mapped_bytes + len, __ATOMIC_RELAXED);
	__atomic_store_n(&map_count, map_count + 1, __ATOMIC_RELAXED);
	if (backend == CLOAK_SECRET_BACKEND_SECRETMEM)
		__atomic_store_n(&secretmem_files, secretmem_files + 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&backend_mutex);
	return m;
}

bool backend_populate(struct secret_map *m, size_t end)
{
	if (end <= m->populated)
		return true;
	if (secretmem_populate(m->base + m->populated, end - m->populated) != 0) {
		explain_failure(end - m->populated, errno);
		return false;
	}
	m->populated = end;
	return true;
}

void backend_unmap(struct secret_map *m)
{
	pthread_mutex_lock(&backend_mutex);
	table_set(m, NULL); /* the second-level tables exist already */
	DLIST_REMOVE(maps, m);
	__atomic_store_n(&mapped_bytes, mapped_bytes - m->len, __ATOMIC_RELAXED);
	__atomic_store_n(&map_count, map_count - 1, __ATOMIC_RELAXED);
	if (m->backend == CLOAK_SECRET_BACKEND_SECRETMEM)
		__atomic_store_n(&secretmem_files, secretmem_files - 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&backend_mutex);
	/* The secret pages and the reservation go in one call: the last mapping
	 * of the file goes, and with it the file. */
	munmap(m->resv, m->resv_len);
	free(m);
}

int backend_protect(struct secret_map *m, int prot)
{
	if (mprotect(m->base, m->len, prot) != 0)
		return -1;
	__atomic_store_n(&m->prot, prot, __ATOMIC_RELAXED);
	return 0;
}

void backend_counts(struct backend_counts *out)
{
	out->bytes = __atomic_load_n(&mapped_bytes, __ATOMIC_RELAXED);
	out->maps = __atomic_load_n(&map_count, __ATOMIC_RELAXED);
	out->secretmem_files = __atomic_load_n(&secretmem_files, __ATOMIC_RELAXED) +
	                       (__atomic_load_n(&staging_fd, __ATOMIC_RELAXED) >= 0);
}

/* ---- fork ---- */

/* Copies at most this much per temporary mapping, so making a child's copy
 * needs little lock limit beyond what the secrets already use. */
#define COPY_WINDOW ((size_t)64 << 10)

/* Calls fn for each run of pages of [base, base + len) that are present
 * (mincore): pages never touched hold zeroes and need no copy. */
static bool for_each_present(char *base, size_t len,
                             bool (*fn)(struct secret_map *, size_t, size_t),
                             struct secret_map *m)
{
	unsigned char vec[COPY_WINDOW / PAGE_SIZE_BYTES];
	for (size_t off = 0; off < len; off += COPY_WINDOW) {
		size_t n = len - off < COPY_WINDOW ? len - off : COPY_WINDOW;
		if (mincore(base + off, n, vec) != 0)
			return false;
		for (size_t i = 0; i < n / PAGE_SIZE_BYTES;) {
			if (!(vec[i] & 1)) {
				i++;
				continue;
			}
			size_t j = i;
			while (j < n / PAGE_SIZE_BYTES && (vec[j] & 1))
				j++;
			if (!fn(m, off + i * PAGE_SIZE_BYTES, (j - i) * PAGE_SIZE_BYTES))
				return false;
			i = j;
		}
	}
	return true;
}

/* Parent: the present pages of m at `off` into the staging file. */
static bool stage_pages(struct secret_map *m, size_t off, size_t n)
{
	void *w = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, staging_fd,
	               (off_t)(m->fork_offset + off));
	if (w == MAP_FAILED)
		return false;
	if (secretmem_populate(w, n) != 0) { /* the lock limit: an error, not a SIGBUS */
		munmap(w, n);
		return false;
	}
	SNAPSHOT_BEGIN();
	memcpy(w, m->base + off, n);
	SNAPSHOT_END();
	munmap(w, n);
	return true;
}

static char staging_error[160];

/* Copies of every memfd_secret mapping into one new memfd_secret file,
 * which the child inherits (and nobody else: it is O_CLOEXEC and the parent
 * closes it once fork returns). Other threads of the parent cannot allocate
 * or free meanwhile (every libcloak lock is held), so the copy is the state
 * of the allocator at fork. Fallback mappings are anonymous and private:
 * the kernel copies them on write if they are inherited. */
static void stage_copies(void)
{
	size_t total = 0;
	staging_error[0] = 0;
	for (struct secret_map *m = maps; m; m = m->next) {
		if (m->backend == CLOAK_SECRET_BACKEND_MLOCK) {
			madvise(m->base, m->len, MADV_DOFORK);
			continue;
		}
		m->fork_offset = total;
		total += m->len;
	}
	if (!total)
		return;
	int fd = secretmem_fd();
	if (fd < 0 || ftruncate(fd, (off_t)total) != 0) {
		snprintf(staging_error, sizeof staging_error, "cannot create a %zu KiB memfd_secret "
		         "file: %s", total >> 10, strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	__atomic_store_n(&staging_fd, fd, __ATOMIC_RELAXED);
	for (struct secret_map *m = maps; m; m = m->next) {
		if (m->backend != CLOAK_SECRET_BACKEND_SECRETMEM)
			continue;
		bool unreadable = !(m->prot & PROT_READ);
		if (unreadable)
			mprotect(m->base, m->len, PROT_READ);
		bool ok = for_each_present(m->base, m->len, stage_pages, m);
		if (unreadable)
			mprotect(m->base, m->len, m->prot);
		if (!ok) {
			snprintf(staging_error, sizeof staging_error, "cannot copy %zu KiB of secrets: "
			         "%s", m->len >> 10, strerror(errno));
			return;
		}
	}
}

void backend_fork_prepare(int fork_mode)
{
	pthread_mutex_lock(&backend_mutex);
	if (fork_mode == CLOAK_SECRET_FORK_COPY)
		stage_copies();
}

static void close_staging(void)
{
	int fd = __atomic_load_n(&staging_fd, __ATOMIC_RELAXED);
	if (fd >= 0)
		close(fd);
	__atomic_store_n(&staging_fd, -1, __ATOMIC_RELAXED);
}

void backend_fork_parent(void)
{
	for (struct secret_map *m = maps; m; m = m->next)
		if (m->backend == CLOAK_SECRET_BACKEND_MLOCK)
			madvise(m->base, m->len, MADV_DONTFORK);
	close_staging();
	pthread_mutex_unlock(&backend_mutex);
}

/* Child: the staged pages of m at `off` into m's new file. */
static bool unstage_pages(struct secret_map *m, size_t off, size_t n)
{
	void *w = mmap(NULL, n, PROT_READ, MAP_SHARED, staging_fd, (off_t)(m->fork_offset + off));
	if (w == MAP_FAILED)
		return false;
	memcpy(m->base + off, w, n);
	munmap(w, n);
	return true;
}

/* The staged pages present in the file are the pages the parent had; a
 * window onto the file shows them to mincore. */
static bool unstage(struct secret_map *m)
{
	for (size_t off = 0; off < m->len; off += COPY_WINDOW) {
		size_t n = m->len - off < COPY_WINDOW ? m->len - off : COPY_WINDOW;
		unsigned char vec[COPY_WINDOW / PAGE_SIZE_BYTES];
		void *w = mmap(NULL, n, PROT_READ, MAP_SHARED, staging_fd,
		               (off_t)(m->fork_offset + off));
		if (w == MAP_FAILED)
			return false;
		int rc = mincore(w, n, vec);
		munmap(w, n);
		if (rc != 0)
			return false;
		for (size_t i = 0; i < n / PAGE_SIZE_BYTES;) {
			size_t j = i;
			while (j < n / PAGE_SIZE_BYTES && (vec[j] & 1))
				j++;
			if (j > i && !unstage_pages(m, off + i * PAGE_SIZE_BYTES, (j - i) * PAGE_SIZE_BYTES))
				return false;
			i = j + 1;
		}
	}
	return true;
}

static void child_copy(void)
{
	if (staging_error[0])
		cloak_die("fork: the child cannot have its copy of the parent's secrets (%s); "
		          "raise RLIMIT_MEMLOCK, or choose CLOAK_FORK=drop", staging_error);
	for (struct secret_map *m = maps; m; m = m->next) {
		if (m->backend == CLOAK_SECRET_BACKEND_MLOCK) {
			/* Inherited copy-on-write; locks are not inherited. */
			if (madvise(m->base, m->len, MADV_DONTFORK) != 0 || lock_pages(m->base, m->len) != 0)
				cloak_die("fork: cannot lock the child's copy of %zu KiB of secrets (%s); "
				          "raise RLIMIT_MEMLOCK", m->len >> 10, strerror(errno));
			continue;
		}
		if (!map_secretmem(m->base, m->len, true, m->populated))
			cloak_die("fork: cannot map the child's copy of %zu KiB of secrets at %p (%s); "
			          "raise RLIMIT_MEMLOCK, or choose CLOAK_FORK=drop", m->len >> 10,
			          (void *)m->base, strerror(errno));
		if (!unstage(m))
			cloak_die("fork: cannot copy %zu KiB of secrets into the child (%s)", m->len >> 10,
			          strerror(errno));
		if (m->prot != (PROT_READ | PROT_WRITE))
			mprotect(m->base, m->len, m->prot);
	}
	close_staging();
}

/* The parent's secrets are not here (MADV_DONTFORK): keep their addresses
 * reserved, PROT_NONE, for the life of the child, so nothing the child maps
 * later lands where a parent's pointer points. If a fork handler that ran
 * before this one mapped something into such a hole, that range is its
 * (not a secret of the child's): it is left alone. */
static void child_drop(void)
{
	for (struct secret_map *m = maps, *next; m; m = next) {
		next = m->next;
		void *q = mmap(m->base, m->len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
		               MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
		if (q != MAP_FAILED && q != m->base) /* a kernel older than MAP_FIXED_NOREPLACE */
			munmap(q, m->len);
		table_set(m, &backend_dropped);
		free(m);
	}
	maps = NULL;
	mapped_bytes = map_count = 0;
	secretmem_files = 0;
}

void backend_fork_child(int fork_mode)
{
	if (fork_mode == CLOAK_SECRET_FORK_COPY)
		child_copy();
	else
		child_drop();
	pthread_mutex_init(&backend_mutex, NULL);
}

const char *cloak_secret_backend_name(int backend)
{
	switch (backend) {
	case CLOAK_SECRET_BACKEND_SECRETMEM: return "memfd_secret";
	case CLOAK_SECRET_BACKEND_MLOCK: return "mlock-fallback";
	default: return "none";
	}
}

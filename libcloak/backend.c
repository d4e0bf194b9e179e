/*
 * Where libcloak's memory comes from. memfd_secret is the only backend unless
 * the program accepted the documented fallback (mlock + MADV_DONTDUMP +
 * MADV_DONTFORK) through CLOAK_FALLBACK=mlock or cloak_secret_set_policy():
 * libcloak never hands out weaker memory silently. Failures set ENOMEM and a
 * one-line diagnostic the caller reads with cloak_secret_last_error().
 */
#include "internal.h"
#include "secretmem.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

struct cloak_config cloak_cfg;

static __thread char last_error[320];
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

void set_last_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_error, sizeof last_error, fmt, ap);
	va_end(ap);
}

const char *cloak_secret_last_error(void)
{
	return last_error;
}

void cloak_die(const char *fmt, ...)
{
	char msg[512];
	int n = snprintf(msg, sizeof msg, "libcloak: ");
	va_list ap;
	va_start(ap, fmt);
	n += vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof msg - 2)
		n = (int)sizeof msg - 2;
	msg[n++] = '\n';
	ssize_t w = write(STDERR_FILENO, msg, (size_t)n);
	(void)w;
	abort();
}

static bool env_is(const char *name, const char *value)
{
	const char *v = getenv(name);
	return v && !strcmp(v, value);
}

static void atfork_prepare(void)
{
	mapped_atfork_prepare();
	pool_atfork_prepare();
}
static void atfork_parent(void)
{
	pool_atfork_parent();
	mapped_atfork_parent();
}
/* The child has none of the secret memory (MADV_DONTFORK): it starts over. */
static void atfork_child(void)
{
	pool_atfork_child();
	mapped_atfork_child();
	stats_reset_after_fork();
}

static void do_init(void)
{
	if (env_is("CLOAK_FALLBACK", "mlock"))
		cloak_cfg.policy = CLOAK_POLICY_ALLOW_MLOCK_FALLBACK;
	if (env_is("CLOAK_DEBUG", "guard"))
		cloak_cfg.debug |= CLOAK_DEBUG_GUARD_ALL;
	cloak_cfg.force_no_secretmem = env_is("CLOAK_TEST_NO_SECRETMEM", "1");
	cloak_cfg.print_stats = env_is("CLOAK_STATS", "1");
	uint64_t keys[2];
	if (getrandom(keys, sizeof keys, 0) != (ssize_t)sizeof keys)
		cloak_die("getrandom failed (%s): cannot key the canaries", strerror(errno));
	cloak_cfg.key = keys[0];
	cloak_cfg.canary_key = keys[1] | 1;
	pool_init();
	stats_start();
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

void cloak_init(void)
{
	pthread_once(&init_once, do_init);
}

int backend_current(void)
{
	cloak_init();
	if (!cloak_cfg.force_no_secretmem && secretmem_supported())
		return CLOAK_BACKEND_SECRETMEM;
	if (__atomic_load_n(&cloak_cfg.policy, __ATOMIC_RELAXED) == CLOAK_POLICY_ALLOW_MLOCK_FALLBACK)
		return CLOAK_BACKEND_MLOCK;
	return CLOAK_BACKEND_NONE;
}

int cloak_secret_set_policy(int policy)
{
	if (policy != CLOAK_POLICY_SECRETMEM_ONLY && policy != CLOAK_POLICY_ALLOW_MLOCK_FALLBACK) {
		errno = EINVAL;
		return -1;
	}
	cloak_init();
	__atomic_store_n(&cloak_cfg.policy, policy, __ATOMIC_RELAXED);
	return 0;
}

int cloak_secret_set_debug(int flags)
{
	if (flags & ~CLOAK_DEBUG_GUARD_ALL) {
		errno = EINVAL;
		return -1;
	}
	cloak_init();
	__atomic_store_n(&cloak_cfg.debug, flags, __ATOMIC_RELAXED);
	return 0;
}

const char *cloak_secret_backend_name(int backend)
{
	switch (backend) {
	case CLOAK_BACKEND_SECRETMEM: return "memfd_secret";
	case CLOAK_BACKEND_MLOCK: return "mlock-fallback";
	default: return "none";
	}
}

int cloak_secret_info(struct cloak_secret_info *out)
{
	if (!out) {
		errno = EINVAL;
		return -1;
	}
	memset(out, 0, sizeof *out);
	out->backend = backend_current();
	const unsigned checks = CLOAK_PROT_CANARIES | CLOAK_PROT_ZERO_ON_FREE;
	if (out->backend == CLOAK_BACKEND_SECRETMEM)
		out->protections = CLOAK_PROT_NO_DIRECT_MAP | CLOAK_PROT_LOCKED | CLOAK_PROT_NO_DUMP |
		                   CLOAK_PROT_NO_FORK | CLOAK_PROT_NO_PEEK | checks;
	else if (out->backend == CLOAK_BACKEND_MLOCK)
		out->protections = CLOAK_PROT_LOCKED | CLOAK_PROT_NO_DUMP | CLOAK_PROT_NO_FORK | checks;
	out->policy = __atomic_load_n(&cloak_cfg.policy, __ATOMIC_RELAXED);
	out->debug = __atomic_load_n(&cloak_cfg.debug, __ATOMIC_RELAXED);
	if (out->backend != CLOAK_BACKEND_NONE && (out->debug & CLOAK_DEBUG_GUARD_ALL))
		out->protections |= CLOAK_PROT_GUARD_ALL;
	struct memlock_info mi;
	memlock_query(&mi);
	out->memlock_soft = mi.soft;
	out->memlock_hard = mi.hard;
	out->cap_ipc_lock = mi.cap_ipc_lock;
	out->arena_size = ARENA_SIZE;
	out->pooled_max = POOL_MAX_SIZE;
	return 0;
}

static void explain_lock_failure(size_t len, int err)
{
	struct memlock_info mi;
	memlock_query(&mi);
	uint64_t held = __atomic_load_n(&cloak_counters.arena_bytes, __ATOMIC_RELAXED) +
	                __atomic_load_n(&cloak_counters.mapped_bytes, __ATOMIC_RELAXED);
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
	} else {
		set_last_error("cannot map %zu KiB of secret memory: %s", len >> 10, strerror(err));
	}
}

static bool map_fallback(char *p, size_t len)
{
	if (mmap(p, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
	    MAP_FAILED)
		return false;
	/* Never weaker than promised: each step must succeed. mlock goes through
	 * syscall() because sanitizer runtimes replace mlock() with a no-op. */
	if (madvise(p, len, MADV_DONTDUMP) != 0 || madvise(p, len, MADV_DONTFORK) != 0 ||
	    syscall(SYS_mlock, p, len) != 0)
		return false;
	return true;
}

char *backend_map(size_t len, size_t align, size_t guard)
{
	int backend = backend_current();
	if (backend == CLOAK_BACKEND_NONE) {
		set_last_error("memfd_secret is not available on this kernel and the policy refuses "
		               "weaker memory; set CLOAK_FALLBACK=mlock (or call cloak_secret_set_policy"
		               "(CLOAK_POLICY_ALLOW_MLOCK_FALLBACK)) to accept mlocked memory");
		errno = ENOMEM;
		return NULL;
	}
	size_t extra = align > PAGE_SIZE_BYTES ? align : 0;
	if (len > SIZE_MAX / 2 || guard > SIZE_MAX / 4) {
		set_last_error("cannot allocate %zu bytes: too large", len);
		errno = ENOMEM;
		return NULL;
	}
	size_t total = len + 2 * guard + extra;
	char *res = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (res == MAP_FAILED) {
		set_last_error("cannot reserve %zu KiB of address space: %s", total >> 10, strerror(errno));
		errno = ENOMEM;
		return NULL;
	}
	char *p = res + guard;
	if (extra)
		p = (char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
	char *lo = p - guard, *hi = p + len + guard;
	if (lo > res)
		munmap(res, (size_t)(lo - res));
	if (res + total > hi)
		munmap(hi, (size_t)(res + total - hi));
	bool ok;
	if (backend == CLOAK_BACKEND_SECRETMEM)
		ok = secretmem_map_at(p, len) != NULL;
	else
		ok = map_fallback(p, len);
	if (!ok) {
		int err = errno;
		munmap(lo, (size_t)(hi - lo));
		explain_lock_failure(len, err);
		errno = ENOMEM;
		return NULL;
	}
	return p;
}

void backend_unmap(char *p, size_t len, size_t guard)
{
	munmap(p - guard, len + 2 * guard);
}

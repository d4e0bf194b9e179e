/* SPDX-License-Identifier: ISC */
/*
 * The idle release: when the memory kept for reuse goes back to the kernel
 * once no secret is live.
 *
 * Linux refuses to hibernate while any memfd_secret file exists, so a
 * process that holds no secret must not keep secret memory for long. But
 * giving it all back at the very free that leaves nothing live makes the
 * next secret map and fault in fresh memory (tens of microseconds a page),
 * and that is what short-lived tools and programs that hold a key only
 * while they use it do all the time. So the memory stays, already wiped
 * (every free zeroes what the secret used), for IDLE_RELEASE_MS after the
 * last free that left nothing live, and is then given back unless a secret
 * is live by then.
 *
 * Something must run after that delay in a process that may never call
 * libcloak again. A timer signal would intrude on the host program (its
 * handlers, EINTR on its system calls, a signal number of its own); so a
 * helper thread does it, with every signal blocked. To keep it out of the
 * way, the helper is started only right after libcloak mapped new secret
 * memory (an allocation, when no helper runs), never at a free: a program
 * that puts itself in a sandbox later (seccomp filters that refuse clone)
 * and only reuses memory libcloak holds never sees libcloak start a thread
 * inside it. It exits once it has given everything back, so an idle
 * process is single-threaded again. If no helper runs (it could not be
 * started, or it exited while new memory was being mapped), the free that
 * leaves nothing live gives everything back at once, as the release rule
 * always did.
 *
 * Fork: the helper does not exist in a child, and a forked child never
 * starts one (see idle_fork_child): it gives everything back at its last
 * free, at once, until it execs. Before fork, a process with no live
 * secret gives everything back, so no child copies free memory.
 */
#include "idle.h"
#include "backend.h"
#include "mapped.h"
#include "pool.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>

enum helper_state { HELPER_NONE, HELPER_RUNNING, HELPER_UNAVAILABLE };

static pthread_mutex_t idle_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t idle_cond; /* CLOCK_MONOTONIC; signalled when a delay starts */
static bool cond_ready;
/* Under idle_lock; helper also read atomically by idle_after_alloc. */
static int helper = HELPER_NONE;
static bool pending;       /* a delay runs: nothing was live after the last free */
static bool helper_waiting; /* the helper waits for a delay to start */
static uint64_t idle_since; /* when the last free left nothing live (ns) */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void cond_init(void)
{
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&idle_cond, &a);
	pthread_condattr_destroy(&a);
}

/* Gives back everything kept for reuse, in each module whose secrets are
 * all freed (each checks under its own locks). */
static void release_if_idle(void)
{
	pool_release_idle();
	mapped_release_cache(false);
}

static bool nothing_live(void)
{
	return !pool_busy() && !mapped_busy();
}

static bool nothing_mapped(void)
{
	struct backend_counts bc;
	backend_counts(&bc);
	return bc.maps == 0;
}

static void *helper_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&idle_lock);
	for (;;) {
		if (!pending) {
			helper_waiting = true;
			pthread_cond_wait(&idle_cond, &idle_lock);
			helper_waiting = false;
			continue;
		}
		uint64_t due = idle_since + (uint64_t)IDLE_RELEASE_MS * 1000000u;
		if (now_ns() < due) {
			/* A later free moves idle_since: wake at the old due time,
			 * then sleep until the new one. */
			struct timespec ts = { (time_t)(due / 1000000000u), (long)(due % 1000000000u) };
			pthread_cond_timedwait(&idle_cond, &idle_lock, &ts);
			continue;
		}
		pending = false;
		pthread_mutex_unlock(&idle_lock);
		if (nothing_live())
			release_if_idle();
		pthread_mutex_lock(&idle_lock);
		if (!pending && nothing_mapped()) {
			__atomic_store_n(&helper, HELPER_NONE, __ATOMIC_RELAXED);
			pthread_mutex_unlock(&idle_lock);
			return NULL;
		}
	}
}

/* Call with idle_lock held. Every signal is blocked in the helper, so the
 * host program's signals never land on it. */
static void helper_start_locked(void)
{
	if (!cond_ready) {
		cond_init();
		cond_ready = true;
	}
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, (size_t)256 << 10);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_t t;
	int rc = pthread_create(&t, &attr, helper_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	pending = helper_waiting = false;
	__atomic_store_n(&helper, rc == 0 ? HELPER_RUNNING : HELPER_UNAVAILABLE, __ATOMIC_RELAXED);
}

void idle_after_alloc(void)
{
	if (CLOAK_LIKELY(__atomic_load_n(&helper, __ATOMIC_RELAXED) != HELPER_NONE))
		return;
	pthread_mutex_lock(&idle_lock);
	if (helper == HELPER_NONE)
		helper_start_locked();
	pthread_mutex_unlock(&idle_lock);
}

void idle_after_free(void)
{
	if (!nothing_live())
		return;
	pthread_mutex_lock(&idle_lock);
	if (helper != HELPER_RUNNING) {
		pthread_mutex_unlock(&idle_lock);
		release_if_idle();
		return;
	}
	idle_since = now_ns();
	if (!pending) {
		pending = true;
		if (helper_waiting)
			pthread_cond_signal(&idle_cond);
	}
	pthread_mutex_unlock(&idle_lock);
}

void idle_release_now(void)
{
	if (nothing_live())
		release_if_idle();
}

void idle_fork_prepare(void)
{
	pthread_mutex_lock(&idle_lock);
	if (nothing_live()) {
		release_if_idle();
		pending = false;
	}
}

void idle_fork_parent(void)
{
	pthread_mutex_unlock(&idle_lock);
}

/* The child starts no thread: after fork() in a process with threads (and
 * the helper may be one), the child may call only async-signal-safe
 * functions, and a child is often put in a sandbox right after fork. */
void idle_fork_child(void)
{
	pthread_mutex_init(&idle_lock, NULL);
	cond_ready = false; /* the parent's helper may have been waiting on it */
	helper = HELPER_UNAVAILABLE;
	pending = helper_waiting = false;
}

/* SPDX-License-Identifier: ISC */
/*
 * What a forked child gets. Never the parent's pages: a child made without
 * libcloak's fork handlers (a raw fork system call) faults on every secret
 * (MADV_DONTFORK). With CLOAK_SECRET_FORK_DROP (libcloak.so's default) the
 * child has none of the secrets, the parent's addresses stay reserved and
 * fault, and the child's own secrets never land there. With
 * CLOAK_SECRET_FORK_COPY (the preloads' default) the child has its own copy
 * of every secret, at the same address, in a memfd_secret file of its own:
 * its writes do not reach the parent, nor the parent's (or a free after fork)
 * the child. Tested with fork, daemon(), threads running at fork time, and
 * the mlock fallback.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <cloak/secret.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"

static volatile unsigned char sink;

static int wait_status(pid_t pid)
{
	int status;
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* A child that reads p: FAULT_EXIT if that faulted, 0 if not. With `raw`,
 * the child is made by the fork system call itself, so no fork handler
 * runs: only MADV_DONTFORK keeps the pages from it. */
static int child_reads(const unsigned char *p, bool raw)
{
	pid_t pid = raw ? (pid_t)syscall(SYS_fork) : fork();
	if (pid == 0) {
		catch_faults();
		sink = *(const volatile unsigned char *)p;
		_exit(0);
	}
	return wait_status(pid);
}

static void fill(unsigned char *p, size_t n, unsigned char v)
{
	memset(p, v, n);
}

static bool all(const unsigned char *p, size_t n, unsigned char v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return false;
	return true;
}

/* The inode of the file mapped at address p in /proc/PID/maps; 0 if none. */
static unsigned long inode_at(pid_t pid, const void *p)
{
	char path[64], line[512];
	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	unsigned long found = 0;
	while (f && fgets(line, sizeof line, f)) {
		unsigned long lo, hi, inode;
		if (sscanf(line, "%lx-%lx %*s %*s %*s %lu", &lo, &hi, &inode) == 3 &&
		    (uintptr_t)p >= lo && (uintptr_t)p < hi)
			found = inode;
	}
	if (f)
		fclose(f);
	return found;
}

struct secrets {
	unsigned char *pooled, *guarded, *large;
};

static void make_secrets(struct secrets *s)
{
	s->pooled = cloak_secret_alloc(32);
	s->guarded = cloak_secret_alloc_guarded(100);
	s->large = cloak_secret_alloc(200000);
	fill(s->pooled, 32, 0x11);
	fill(s->guarded, 100, 0x22);
	fill(s->large, 200000, 0x33);
}

static bool secrets_intact(const struct secrets *s)
{
	return all(s->pooled, 32, 0x11) && all(s->guarded, 100, 0x22) &&
	       all(s->large, 200000, 0x33);
}

static void free_secrets(struct secrets *s)
{
	cloak_secret_free(s->pooled);
	cloak_secret_free(s->guarded);
	cloak_secret_free(s->large);
}

/* A child (made as child_reads says with `raw`) faults on each kind of the
 * parent's secrets, and the parent's stay intact. */
static void children_fault_on_secrets(bool raw)
{
	struct secrets s;
	make_secrets(&s);
	assert_int_equal(child_reads(s.pooled, raw), FAULT_EXIT);
	assert_int_equal(child_reads(s.guarded, raw), FAULT_EXIT);
	assert_int_equal(child_reads(s.large, raw), FAULT_EXIT);
	assert_true(secrets_intact(&s));
	free_secrets(&s);
}

/* ---- without fork handlers ---- */

static void raw_fork_child_faults(void **state)
{
	children_fault_on_secrets(true);
}

/* ---- drop ---- */

static void drop_child_faults_on_parent_secrets(void **state)
{
	children_fault_on_secrets(false);
}

/* The child's allocator starts over, and no secret of the child lands at
 * an address where the parent has one: a parent's pointer in the child
 * faults rather than reads the child's own secret. Many rounds, since the
 * kernel hands a free hole back at once. */
static void drop_child_never_reuses_parent_addresses(void **state)
{
	struct secrets s;
	make_secrets(&s);
	void *keep[50];
	for (int i = 0; i < 50; i++)
		keep[i] = cloak_secret_alloc(48);
	for (int round = 0; round < 200; round++) {
		pid_t pid = fork();
		if (pid == 0) {
			struct cloak_secret_stats st;
			cloak_secret_stats(&st);
			if (st.secrets_in_use != 0 || st.arenas != 0)
				_exit(2);
			unsigned char *p = cloak_secret_alloc(32), *g = cloak_secret_alloc_guarded(100);
			unsigned char *l = cloak_secret_alloc(200000);
			if (!p || !g || !l)
				_exit(3);
			if (p == s.pooled || g == s.guarded || l == s.large)
				_exit(4); /* the parent's address again */
			/* The parent's secret pages stay reserved: nothing else can
			 * be mapped there either. */
			const unsigned char *parents[] = { s.pooled, s.guarded, s.large };
			for (int i = 0; i < 3; i++) {
				void *page = (void *)((uintptr_t)parents[i] & ~(uintptr_t)4095);
				void *q = mmap(page, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS |
				               MAP_FIXED_NOREPLACE, -1, 0);
				if (q != MAP_FAILED || errno != EEXIST)
					_exit(7);
			}
			for (int i = 0; i < 50; i++)
				if ((void *)p == keep[i])
					_exit(5);
			cloak_secret_free(p);
			cloak_secret_free(g);
			cloak_secret_free(l);
			catch_faults();
			sink = *(volatile unsigned char *)s.pooled;
			_exit(6);
		}
		int rc = wait_status(pid);
		if (rc != FAULT_EXIT)
			fail_msg("round %d: child ended with %d", round, rc);
	}
	for (int i = 0; i < 50; i++)
		cloak_secret_free(keep[i]);
	free_secrets(&s);
}

static int free_parent_secret(void)
{
	unsigned char *p = cloak_secret_alloc(32);
	pid_t pid = fork();
	if (pid == 0) {
		cloak_secret_free(p);
		_exit(0);
	}
	return wait_status(pid);
}

static void drop_child_cannot_free_parent_secrets(void **state)
{
	expect_exit("free_parent_secret", NULL, 128 + 6, "a secret of the parent process");
}

/* ---- copy ---- */

static void copy_child_has_its_own_copy(void **state)
{
	assert_int_equal(cloak_secret_set_fork(CLOAK_SECRET_FORK_COPY), 0);
	struct secrets s;
	make_secrets(&s);
	unsigned char *hidden = cloak_secret_alloc_guarded(64);
	fill(hidden, 64, 0x44);
	assert_int_equal(cloak_secret_protect(hidden, CLOAK_SECRET_NOACCESS), 0);
	struct cloak_secret_stats before;
	cloak_secret_stats(&before);
	int go[2], done[2];
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(done), 0);
	pid_t pid = fork();
	if (pid == 0) {
		char c;
		struct cloak_secret_stats st;
		cloak_secret_stats(&st);
		if (st.secrets_in_use != before.secrets_in_use)
			_exit(2);
		if (!secrets_intact(&s))
			_exit(3);
		if (cloak_secret_protect(hidden, CLOAK_SECRET_READONLY) || !all(hidden, 64, 0x44))
			_exit(4);
		/* The child's writes are its own. */
		fill(s.pooled, 32, 0x55);
		fill(s.large, 200000, 0x55);
		if (write(done[1], "w", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(5);
		/* The parent wrote and freed meanwhile: the child's copy is intact. */
		if (!all(s.pooled, 32, 0x55) || !all(s.guarded, 100, 0x22) ||
		    !all(s.large, 200000, 0x55))
			_exit(6);
		/* Its secrets work like any: free them, allocate new ones. */
		free_secrets(&s);
		cloak_secret_free(hidden);
		unsigned char *p = cloak_secret_alloc(32);
		if (!p || !all(p, 32, 0))
			_exit(7);
		cloak_secret_free(p);
		_exit(0);
	}
	/* Only the child writes `done`, only the parent `go`: a child that dies
	 * early gives an end of file, not a hang. */
	close(done[1]), close(go[0]);
	char c;
	if (read(done[0], &c, 1) != 1) {
		int rc = wait_status(pid);
		fail_msg("the child ended before its checks: status %d", rc);
	}
	/* Another file at the same address: no page is shared. */
	unsigned long mine = inode_at(getpid(), s.pooled), childs = inode_at(pid, s.pooled);
	assert_true(mine != 0 && childs != 0);
	assert_true(mine != childs);
	assert_true(inode_at(getpid(), s.large) != inode_at(pid, s.large));
	assert_true(all(s.pooled, 32, 0x11)); /* the child's write did not reach us */
	assert_true(all(s.large, 200000, 0x33));
	fill(s.guarded, 100, 0x66);
	free_secrets(&s); /* zeroes ours; not the child's */
	assert_int_equal(write(go[1], "g", 1), 1);
	assert_int_equal(wait_status(pid), 0);
	cloak_secret_protect(hidden, CLOAK_SECRET_READWRITE);
	assert_true(all(hidden, 64, 0x44));
	cloak_secret_free(hidden);
	close(go[1]), close(done[0]);
	cloak_secret_set_fork(CLOAK_SECRET_FORK_DROP);
}

/* daemon() forks and the parent exits: the daemon keeps the secrets. The
 * scenario prints from the daemon, which keeps the output pipe open. */
static int daemon_keeps_secrets(void)
{
	struct secrets s;
	make_secrets(&s);
	if (daemon(1, 1) != 0)
		return 2;
	printf("daemon %s\n", secrets_intact(&s) ? "has its secrets" : "LOST its secrets");
	fflush(stdout);
	free_secrets(&s);
	return 0;
}

static void copy_daemon_keeps_secrets(void **state)
{
	static const char *const env[] = { "CLOAK_FORK=copy", NULL };
	expect_exit("daemon_keeps_secrets", env, 0, "daemon has its secrets");
}

/* ---- fork while other threads allocate ---- */

static int churn_stop; /* atomic */

static void *churn(void *arg)
{
	unsigned n = 0;
	while (!__atomic_load_n(&churn_stop, __ATOMIC_RELAXED)) {
		unsigned char *p = cloak_secret_alloc(100), *g = cloak_secret_alloc_guarded(10);
		unsigned char *l = n++ % 16 ? NULL : cloak_secret_alloc(100000);
		if (p)
			fill(p, 100, 0x77);
		cloak_secret_free(p);
		cloak_secret_free(g);
		cloak_secret_free(l);
	}
	return NULL;
}

/* The fork handlers take every lock first, so the child never inherits one
 * held (it would hang; the alarm turns that into a failure) or a
 * half-updated list; with COPY it has the secrets made before the threads
 * started, intact. */
static void fork_while_threads_allocate(int mode)
{
	assert_int_equal(cloak_secret_set_fork(mode), 0);
	struct secrets s;
	make_secrets(&s);
	pthread_t t[2];
	__atomic_store_n(&churn_stop, 0, __ATOMIC_RELAXED);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, churn, NULL), 0);
	for (int i = 0; i < 40; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			alarm(10);
			if (mode == CLOAK_SECRET_FORK_COPY && !secrets_intact(&s))
				_exit(3);
			/* One secret kept, as a server keeps its key: without one,
			 * every free would hand all memory back (and each new secret
			 * fault fresh pages in). */
			void *key = cloak_secret_alloc(32);
			for (int j = 0; j < 2000; j++) {
				void *p = cloak_secret_alloc((size_t)j % 300);
				void *g = j % 100 ? NULL : cloak_secret_alloc_guarded(5);
				if (!p)
					_exit(2);
				cloak_secret_free(p);
				cloak_secret_free(g);
			}
			cloak_secret_free(key);
			if (mode == CLOAK_SECRET_FORK_COPY)
				free_secrets(&s);
			_exit(0);
		}
		int rc = wait_status(pid);
		if (rc != 0)
			fail_msg("child %d: status %d", i, rc);
	}
	__atomic_store_n(&churn_stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	assert_true(secrets_intact(&s));
	free_secrets(&s);
	cloak_secret_set_fork(CLOAK_SECRET_FORK_DROP);
}

static void drop_fork_while_threads_allocate(void **state)
{
	fork_while_threads_allocate(CLOAK_SECRET_FORK_DROP);
}

static void copy_fork_while_threads_allocate(void **state)
{
	fork_while_threads_allocate(CLOAK_SECRET_FORK_COPY);
}

/* ---- the mlock fallback ---- */

/* Whether the mapping holding p is locked ("lo" in its VmFlags). */
static bool locked_at(const void *p)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	char line[512];
	bool in = false, locked = false;
	while (f && fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
			in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
		else if (in && !strncmp(line, "VmFlags:", 8))
			locked = strstr(line, " lo") != NULL;
	}
	if (f)
		fclose(f);
	return locked;
}

static int fallback_fork(void)
{
	struct cloak_secret_info info;
	cloak_secret_info(&info);
	if (info.backend != CLOAK_SECRET_BACKEND_MLOCK)
		return 3;
	unsigned char *p = cloak_secret_alloc(32), *g = cloak_secret_alloc_guarded(32);
	p[0] = g[0] = 1;
	if (child_reads(p, true) != FAULT_EXIT || child_reads(g, true) != FAULT_EXIT)
		return 4;
	if (info.fork_mode == CLOAK_SECRET_FORK_DROP)
		return child_reads(p, false) == FAULT_EXIT && child_reads(g, false) == FAULT_EXIT ? 0 : 5;
	pid_t pid = fork();
	if (pid == 0) {
		/* The child's copy is its own and locked again. */
		p[0] = 2;
		_exit(p[0] == 2 && g[0] == 1 && locked_at(p) && locked_at(g) ? 0 : 6);
	}
	if (wait_status(pid) != 0)
		return 6;
	return p[0] == 1 ? 0 : 7;
}

static const struct scenario scenarios[] = {
	{ "free_parent_secret", free_parent_secret },
	{ "daemon_keeps_secrets", daemon_keeps_secrets },
	{ "fallback_fork", fallback_fork },
	{ NULL, NULL },
};

static void fallback_children(void **state)
{
	static const char *const drop[] = { "CLOAK_TEST_NO_SECRETMEM=1", "CLOAK_FALLBACK=mlock", NULL };
	static const char *const copy[] = { "CLOAK_TEST_NO_SECRETMEM=1", "CLOAK_FALLBACK=mlock",
		                            "CLOAK_FORK=copy", NULL };
	expect_exit("fallback_fork", drop, 0, NULL);
	expect_exit("fallback_fork", copy, 0, NULL);
}

int main(int argc, char **argv)
{
	scenario_dispatch(argc, argv, scenarios);
	require_secretmem_or_skip_all();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(raw_fork_child_faults),
		cmocka_unit_test(drop_child_faults_on_parent_secrets),
		cmocka_unit_test(drop_child_never_reuses_parent_addresses),
		cmocka_unit_test(drop_child_cannot_free_parent_secrets),
		cmocka_unit_test(copy_child_has_its_own_copy),
		cmocka_unit_test(copy_daemon_keeps_secrets),
		cmocka_unit_test(drop_fork_while_threads_allocate),
		cmocka_unit_test(copy_fork_while_threads_allocate),
		cmocka_unit_test(fallback_children),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

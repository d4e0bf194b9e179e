/*
 * Children do not get the secrets: arenas and guarded mappings are
 * MADV_DONTFORK, so a forked child faults on a parent's secret, starts with
 * an empty pool of its own, and the parent keeps its secrets intact. The same
 * holds for the mlock fallback.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <cloak/secret.h>
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"

static volatile unsigned char sink;

/* Forks; the child reads `p` (which must fault) and exits 0 if it did not. */
static int child_reads(const unsigned char *p)
{
	pid_t pid = fork();
	if (pid == 0) {
		catch_faults();
		sink = *(const volatile unsigned char *)p;
		_exit(0);
	}
	int status;
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int fallback_is_not_inherited(void)
{
	struct cloak_secret_info info;
	cloak_secret_info(&info);
	if (info.backend != CLOAK_BACKEND_MLOCK)
		return 3;
	unsigned char *p = cloak_secret_alloc(32), *g = cloak_secret_alloc_guarded(32);
	p[0] = g[0] = 1;
	if (child_reads(p) != FAULT_EXIT || child_reads(g) != FAULT_EXIT)
		return 4;
	return 0;
}

static const struct scenario scenarios[] = {
	{ "fallback_is_not_inherited", fallback_is_not_inherited },
	{ NULL, NULL },
};

static void child_faults_on_parent_secrets(void **state)
{
	unsigned char *pooled = cloak_secret_alloc(32);
	unsigned char *guarded = cloak_secret_alloc_guarded(100);
	unsigned char *large = cloak_secret_alloc(200000);
	memset(pooled, 0x11, 32);
	memset(guarded, 0x22, 100);
	memset(large, 0x33, 200000);
	assert_int_equal(child_reads(pooled), FAULT_EXIT);
	assert_int_equal(child_reads(guarded), FAULT_EXIT);
	assert_int_equal(child_reads(large), FAULT_EXIT);
	/* The parent's copies are untouched. */
	for (int i = 0; i < 32; i++)
		assert_int_equal(pooled[i], 0x11);
	assert_int_equal(guarded[99], 0x22);
	assert_int_equal(large[199999], 0x33);
	cloak_secret_free(pooled);
	cloak_secret_free(guarded);
	cloak_secret_free(large);
}

/* The child's allocator starts over: no slot or counter refers to the
 * parent's (absent) arenas, and new secrets work. */
static void child_starts_with_an_empty_pool(void **state)
{
	void *keep[50];
	for (int i = 0; i < 50; i++)
		keep[i] = cloak_secret_alloc(48);
	cloak_secret_free(cloak_secret_alloc(48)); /* a cached free slot in the parent */
	pid_t pid = fork();
	if (pid == 0) {
		struct cloak_secret_stats s;
		cloak_secret_stats(&s);
		if (s.secrets_in_use != 0 || s.arenas != 0)
			_exit(2);
		for (int round = 0; round < 3; round++) {
			unsigned char *p[1000];
			for (int i = 0; i < 1000; i++) {
				p[i] = cloak_secret_alloc(48);
				if (!p[i])
					_exit(3);
				memset(p[i], i, 48);
			}
			for (int i = 0; i < 1000; i++)
				cloak_secret_free(p[i]);
		}
		cloak_secret_stats(&s);
		_exit(s.arenas == 1 && s.secrets_in_use == 0 ? 0 : 4);
	}
	int status;
	waitpid(pid, &status, 0);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	for (int i = 0; i < 50; i++)
		cloak_secret_free(keep[i]);
}

static volatile int churn_stop;

static void *churn(void *arg)
{
	while (!churn_stop) {
		void *p = cloak_secret_alloc(100), *g = cloak_secret_alloc_guarded(10);
		cloak_secret_free(p);
		cloak_secret_free(g);
	}
	return NULL;
}

/* fork() while another thread is inside the allocator: the fork handlers
 * take every lock first, so the child never inherits one held (it would
 * hang; the alarm turns that into a failure) or a half-updated list. */
static void fork_while_another_thread_allocates(void **state)
{
	pthread_t t;
	churn_stop = 0;
	assert_int_equal(pthread_create(&t, NULL, churn, NULL), 0);
	for (int i = 0; i < 40; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			alarm(10);
			for (int j = 0; j < 2000; j++) {
				void *p = cloak_secret_alloc((size_t)j % 300);
				void *g = j % 100 ? NULL : cloak_secret_alloc_guarded(5);
				if (!p)
					_exit(2);
				cloak_secret_free(p);
				cloak_secret_free(g);
			}
			_exit(0);
		}
		int status;
		waitpid(pid, &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			fail_msg("child %d: status %#x", i, status);
	}
	churn_stop = 1;
	pthread_join(t, NULL);
}

static void fallback_children_do_not_inherit(void **state)
{
	static const char *const env[] = { "CLOAK_TEST_NO_SECRETMEM=1", "CLOAK_FALLBACK=mlock", NULL };
	struct child_result r;
	run_scenario("fallback_is_not_inherited", env, NULL, &r);
	if (!r.exited || r.code != 0)
		fail_msg("exit %d signal %d: %s", r.code, r.signal, r.out);
}

int main(int argc, char **argv)
{
	scenario_dispatch(argc, argv, scenarios);
	require_secretmem_or_skip_all();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(child_faults_on_parent_secrets),
		cmocka_unit_test(child_starts_with_an_empty_pool),
		cmocka_unit_test(fork_while_another_thread_allocates),
		cmocka_unit_test(fallback_children_do_not_inherit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

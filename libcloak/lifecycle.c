/* SPDX-License-Identifier: ISC */
/*
 * Start-up, fork and exit. The fork handlers of every module are called
 * from here, in one order:
 *
 *   prepare (parent, before fork): idle (lock; if no secret is live, give
 *            everything back), mapped (lock, empty the reuse cache),
 *            pool (every lane, then the arena lock), backend (lock; in COPY
 *            mode stage a copy of every secret mapping);
 *   parent (after fork):           the reverse: backend, pool, mapped, idle;
 *   child  (after fork):           mapped and pool keep or forget their
 *            records, then backend gives the child its copies (COPY) or
 *            reserves the parent's addresses (DROP) and releases its lock;
 *            then idle notes that this child starts no helper thread.
 *
 * The fork mode is read once in prepare, under the mapped lock, so mapped,
 * pool and backend agree.
 */
#include "lifecycle.h"
#include "backend.h"
#include "env.h"
#include "idle.h"
#include "mapped.h"
#include "pool.h"
#include "stats.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int default_fork_mode = CLOAK_SECRET_FORK_DROP;
static int fork_mode_now;

static void fork_prepare(void)
{
	idle_fork_prepare(); /* the first lock: concurrent forks wait here */
	mapped_fork_prepare();
	fork_mode_now = CFG_LOAD(fork_mode);
	pool_fork_prepare();
	backend_fork_prepare(fork_mode_now);
}

static void fork_parent(void)
{
	backend_fork_parent();
	pool_fork_parent();
	mapped_fork_parent();
	idle_fork_parent();
}

static void fork_child(void)
{
	mapped_fork_child(fork_mode_now);
	pool_fork_child(fork_mode_now);
	backend_fork_child(fork_mode_now);
	idle_fork_child();
}

static void do_init(void)
{
	if (env_choice(ENV_FALLBACK, 0) == 1)
		CFG_STORE(policy, CLOAK_SECRET_POLICY_ALLOW_MLOCK_FALLBACK);
	if (env_choice(ENV_DEBUG, 0) == 1)
		CFG_STORE(debug, CFG_LOAD(debug) | CLOAK_SECRET_DEBUG_GUARD_ALL);
	int fork_env = env_choice(ENV_FORK, -1);
	int fork_mode = fork_env == 1   ? CLOAK_SECRET_FORK_COPY
	                : fork_env == 0 ? CLOAK_SECRET_FORK_DROP
	                                : default_fork_mode;
	CFG_STORE(fork_mode, fork_mode);
	cloak_cfg.force_no_secretmem = env_choice(ENV_TEST_NO_SECRETMEM, 0) == 1;
	cloak_cfg.print_stats = env_choice(ENV_STATS, 0) == 1;
	uint64_t keys[2];
	if (getrandom(keys, sizeof keys, 0) != (ssize_t)sizeof keys)
		cloak_die("getrandom failed (%s): cannot key the canaries", strerror(errno));
	cloak_cfg.key = keys[0];
	cloak_cfg.canary_key = keys[1] | 1;
	pool_init();
	stats_start();
	if (pthread_atfork(fork_prepare, fork_parent, fork_child) != 0)
		cloak_die("pthread_atfork failed: cannot keep secrets right across fork()");
}

void cloak_init(void)
{
	pthread_once(&init_once, do_init);
}

void lifecycle_default_fork_mode(int mode)
{
	default_fork_mode = mode;
}

/* Checks the environment itself, so a process that never allocated still
 * reports (that it used nothing). */
__attribute__((destructor)) static void print_stats_at_exit(void)
{
	if (cloak_cfg.print_stats || env_choice(ENV_STATS, 0) == 1)
		stats_print(STDERR_FILENO);
}

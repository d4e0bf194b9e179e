/* SPDX-License-Identifier: ISC */
/*
 * Statistics: every module's counters summed on demand (no lock on any
 * allocation path), and the host's direct-map splits since start
 * (/proc/vmstat). CLOAK_STATS=1 prints them on stderr at exit (lifecycle.c).
 *
 * Printing makes no system call but one write(2): it runs at exit in
 * programs that sandbox themselves (sshd's preauth child allows little more
 * than write, and kills a process that calls prlimit64 or opens a file). So
 * the line uses the pid and the arena size found at start (and the pid again
 * in a forked child, before a sandbox could be in place), and leaves out the
 * direct-map splits, which only cloak_secret_stats() reads.
 */
#include "stats.h"
#include "backend.h"
#include "mapped.h"
#include "pool.h"
#include "secretmem.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int64_t splits_at_start = -1;
static pid_t pid_now;
static size_t arena_max_at_start;
static bool started;

static void pid_in_child(void)
{
	pid_now = getpid();
}

/* At load, so that a process that never allocates still prints its pid
 * without asking the kernel at exit. */
__attribute__((constructor)) static void stats_load(void)
{
	pid_now = getpid();
	pthread_atfork(NULL, NULL, pid_in_child);
}

void stats_start(void)
{
	splits_at_start = direct_map_splits();
	arena_max_at_start = pool_arena_max();
	(void)backend_current(); /* probes memfd_secret once; later calls use the answer */
	__atomic_store_n(&started, true, __ATOMIC_RELEASE);
}

/* Everything but the direct-map splits: no system call. */
static void collect_counts(struct cloak_secret_stats *out)
{
	struct pool_counts pc;
	struct mapped_counts mc;
	struct backend_counts bc;
	pool_counts(&pc);
	mapped_counts(&mc);
	backend_counts(&bc);
	memset(out, 0, sizeof *out);
	out->secrets_in_use = pc.live + mc.live;
	out->bytes_in_use = pc.live_bytes + mc.live_bytes;
	out->allocs = pc.allocs + mc.allocs;
	out->frees = pc.frees + mc.frees;
	out->arenas = pc.arenas;
	out->mapped_allocs = mc.live;
	out->cached_mappings = mc.cached;
	out->locked_bytes = bc.bytes;
	out->mappings = bc.maps;
	out->releases = pc.releases;
	out->direct_map_splits = -1;
}

void stats_collect(struct cloak_secret_stats *out)
{
	collect_counts(out);
	int64_t now = direct_map_splits();
	out->direct_map_splits = now >= 0 && splits_at_start >= 0 ? now - splits_at_start : -1;
}

void stats_print(int fd)
{
	struct cloak_secret_stats s;
	struct backend_counts bc;
	collect_counts(&s);
	backend_counts(&bc);
	char line[512];
	int n = snprintf(line, sizeof line,
	        "libcloak stats (pid %d): backend %s; %llu secrets in use (%llu bytes); "
	        "%llu allocs, %llu frees; %llu arenas (up to %zu KiB each), %llu guarded/large "
	        "mappings, %llu cached; %llu KiB locked in %llu mappings; %u memfd_secret files "
	        "(hibernation %s); all memory returned %llu times\n",
	        (int)pid_now,
	        __atomic_load_n(&started, __ATOMIC_ACQUIRE) ? cloak_secret_backend_name(backend_current())
	                                                    : "not started (nothing allocated)",
	        (unsigned long long)s.secrets_in_use, (unsigned long long)s.bytes_in_use,
	        (unsigned long long)s.allocs, (unsigned long long)s.frees,
	        (unsigned long long)s.arenas, arena_max_at_start >> 10,
	        (unsigned long long)s.mapped_allocs, (unsigned long long)s.cached_mappings,
	        (unsigned long long)(s.locked_bytes >> 10), (unsigned long long)s.mappings,
	        bc.secretmem_files, bc.secretmem_files ? "blocked" : "possible",
	        (unsigned long long)s.releases);
	if (n > (int)sizeof line - 1)
		n = (int)sizeof line - 1;
	if (n > 0) {
		ssize_t w = write(fd, line, (size_t)n);
		(void)w;
	}
}

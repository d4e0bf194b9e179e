/*
 * Statistics: the pool's per-thread counters summed on demand, the slow-path
 * counters, and the host's direct-map splits since start (/proc/vmstat).
 * CLOAK_STATS=1 prints them on stderr when the process exits.
 */
#include "internal.h"
#include "secretmem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct global_counters cloak_counters;
static int64_t splits_at_start = -1;

void stats_start(void)
{
	splits_at_start = direct_map_splits();
}

void stats_reset_after_fork(void)
{
	memset(&cloak_counters, 0, sizeof cloak_counters);
}

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

int cloak_secret_stats(struct cloak_secret_stats *out)
{
	cloak_init();
	uint64_t allocs, frees;
	int64_t live, live_bytes;
	pool_collect(&allocs, &frees, &live, &live_bytes);
	memset(out, 0, sizeof *out);
	uint64_t mapped = LOAD(cloak_counters.mapped_allocs);
	out->secrets_in_use = (uint64_t)live + mapped;
	out->bytes_in_use = (uint64_t)live_bytes + LOAD(cloak_counters.mapped_requested);
	out->allocs = allocs + LOAD(cloak_counters.mapped_total_allocs);
	out->frees = frees + LOAD(cloak_counters.mapped_total_frees);
	out->arenas = LOAD(cloak_counters.arenas);
	out->mapped_allocs = mapped;
	out->locked_bytes = LOAD(cloak_counters.arena_bytes) + LOAD(cloak_counters.mapped_bytes);
	/* An arena is one VMA; a guarded secret is three (guard, data, guard). */
	out->mappings = out->arenas + 3 * mapped;
	int64_t now = direct_map_splits();
	out->direct_map_splits = now >= 0 && splits_at_start >= 0 ? now - splits_at_start : -1;
	return 0;
}

void cloak_secret_stats_print(int fd)
{
	struct cloak_secret_stats s;
	struct cloak_secret_info info;
	cloak_secret_stats(&s);
	cloak_secret_info(&info);
	dprintf(fd,
	        "libcloak stats (pid %d): backend %s; %llu secrets in use (%llu bytes); "
	        "%llu allocs, %llu frees; %llu arenas of %zu KiB, %llu guarded/large mappings; "
	        "%llu KiB locked in %llu mappings; direct-map splits since start: %lld\n",
	        (int)getpid(), cloak_secret_backend_name(info.backend),
	        (unsigned long long)s.secrets_in_use, (unsigned long long)s.bytes_in_use,
	        (unsigned long long)s.allocs, (unsigned long long)s.frees,
	        (unsigned long long)s.arenas, ARENA_SIZE >> 10, (unsigned long long)s.mapped_allocs,
	        (unsigned long long)(s.locked_bytes >> 10), (unsigned long long)s.mappings,
	        (long long)s.direct_map_splits);
}

/* Checks the environment itself, so a process that never allocated still
 * reports (that it used nothing). */
__attribute__((destructor)) static void print_stats_at_exit(void)
{
	const char *e = getenv("CLOAK_STATS");
	if (cloak_cfg.print_stats || (e && !strcmp(e, "1")))
		cloak_secret_stats_print(STDERR_FILENO);
}

/* SPDX-License-Identifier: ISC */
/*
 * Statistics: every module's counters summed on demand (no lock on any
 * allocation path), and the host's direct-map splits since start
 * (/proc/vmstat). CLOAK_STATS=1 prints them on stderr at exit (lifecycle.c).
 */
#include "stats.h"
#include "mapped.h"
#include "pool.h"
#include "secretmem.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int64_t splits_at_start = -1;

void stats_start(void)
{
	splits_at_start = direct_map_splits();
}

void stats_collect(struct cloak_secret_stats *out)
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
	int64_t now = direct_map_splits();
	out->direct_map_splits = now >= 0 && splits_at_start >= 0 ? now - splits_at_start : -1;
}

void stats_print(int fd)
{
	struct cloak_secret_stats s;
	struct backend_counts bc;
	stats_collect(&s);
	backend_counts(&bc);
	dprintf(fd,
	        "libcloak stats (pid %d): backend %s; %llu secrets in use (%llu bytes); "
	        "%llu allocs, %llu frees; %llu arenas (up to %zu KiB each), %llu guarded/large "
	        "mappings, %llu cached; %llu KiB locked in %llu mappings; %u memfd_secret files "
	        "(hibernation %s); all memory returned %llu times; direct-map splits since "
	        "start: %lld\n",
	        (int)getpid(), cloak_secret_backend_name(backend_current()),
	        (unsigned long long)s.secrets_in_use, (unsigned long long)s.bytes_in_use,
	        (unsigned long long)s.allocs, (unsigned long long)s.frees,
	        (unsigned long long)s.arenas, pool_arena_max() >> 10,
	        (unsigned long long)s.mapped_allocs, (unsigned long long)s.cached_mappings,
	        (unsigned long long)(s.locked_bytes >> 10), (unsigned long long)s.mappings,
	        bc.secretmem_files, bc.secretmem_files ? "blocked" : "possible",
	        (unsigned long long)s.releases, (long long)s.direct_map_splits);
}

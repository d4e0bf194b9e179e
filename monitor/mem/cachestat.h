/* SPDX-License-Identifier: ISC */
/*
 * cachestat(2) (Linux 6.5), which Debian 12's 6.1 headers lack: how many
 * pages of a file's range are in its page cache, in one call that walks
 * only the pages present. The values are the kernel's uapi ones.
 */
#ifndef CLOAK_CACHESTAT_H
#define CLOAK_CACHESTAT_H

#include <stdint.h>

#define CLOAK_NR_cachestat 451 /* x86-64 */

struct cloak_cachestat_range {
	uint64_t off;
	uint64_t len;
};

struct cloak_cachestat {
	uint64_t nr_cache;
	uint64_t nr_dirty;
	uint64_t nr_writeback;
	uint64_t nr_evicted;
	uint64_t nr_recently_evicted;
};

#endif

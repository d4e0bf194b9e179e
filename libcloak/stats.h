/* SPDX-License-Identifier: ISC */
/*
 * Statistics: the counts of the pool, the guarded allocations and the
 * backend, and the host's direct-map splits since start. Uses pool.h,
 * mapped.h and backend.h.
 */
#ifndef CLOAK_LIBCLOAK_STATS_H
#define CLOAK_LIBCLOAK_STATS_H

#include "core.h"

void stats_start(void) CLOAK_HIDDEN;
void stats_collect(struct cloak_secret_stats *out) CLOAK_HIDDEN;
/* One line: "libcloak stats (pid N): ..." */
void stats_print(int fd) CLOAK_HIDDEN;

#endif

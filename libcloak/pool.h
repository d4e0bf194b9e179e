/* SPDX-License-Identifier: ISC */
/*
 * The pool: secrets up to POOL_MAX_SIZE in slots of size classes, carved from
 * runs of pages of arenas that backend.c maps. Uses backend.h only.
 */
#ifndef CLOAK_LIBCLOAK_POOL_H
#define CLOAK_LIBCLOAK_POOL_H

#include "backend.h"

void pool_init(void) CLOAK_HIDDEN;
/* A zeroed slot for `size` bytes, its header marked if `mark`; NULL with
 * errno (EAGAIN: the lock limit) and a diagnostic. */
void *pool_alloc(size_t size, bool mark) CLOAK_HIDDEN;
/* p is a pooled pointer (its mapping is an arena): checks, zeroes, frees. */
void pool_free(void *p) CLOAK_HIDDEN;
/* In-place resize when the new size fits the slot; false otherwise. */
bool pool_resize(void *p, size_t size) CLOAK_HIDDEN;
/* The requested size; the usable size of the slot. */
size_t pool_size(const void *p) CLOAK_HIDDEN;
size_t pool_slot_usable(const void *p) CLOAK_HIDDEN;
bool pool_marked(const void *p) CLOAK_HIDDEN;

/* True while some pooled secret is live (one atomic load). */
bool pool_busy(void) CLOAK_HIDDEN;
/* If no pooled secret is live, unmaps every arena; returns whether it did. */
bool pool_release_idle(void) CLOAK_HIDDEN;
/* Gives back empty runs and arenas that are kept for reuse (before retrying
 * an allocation that hit the lock limit). */
void pool_trim(void) CLOAK_HIDDEN;
/* The largest arena mapped under the current lock limit. */
size_t pool_arena_max(void) CLOAK_HIDDEN;

struct pool_counts {
	uint64_t allocs, frees, live, live_bytes, arenas, releases;
};
void pool_counts(struct pool_counts *out) CLOAK_HIDDEN;

/* Fork: every pool lock is held across fork(); the child keeps the pool as
 * it was (COPY: backend.c gave it the pages) or forgets it (DROP). */
void pool_fork_prepare(void) CLOAK_HIDDEN;
void pool_fork_parent(void) CLOAK_HIDDEN;
void pool_fork_child(int fork_mode) CLOAK_HIDDEN;

/* The size-class table (for tests). */
unsigned pool_class_of(size_t size) CLOAK_HIDDEN;
size_t pool_class_usable(unsigned cls) CLOAK_HIDDEN;
unsigned pool_class_count(void) CLOAK_HIDDEN;

#endif

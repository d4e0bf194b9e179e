/* SPDX-License-Identifier: ISC */
/*
 * Secrets on secret pages of their own between guard pages: guarded ones
 * (cloak_secret_alloc_guarded, sodium_malloc), requests above the pooled
 * maximum, and everything in guard-all debug mode. Uses backend.h only.
 */
#ifndef CLOAK_LIBCLOAK_MAPPED_H
#define CLOAK_LIBCLOAK_MAPPED_H

#include "backend.h"

/* align 1: the data ends at the end of a page (a one-byte overflow faults);
 * align 16: the pointer is 16-aligned and the slack before the guard page
 * holds a canary. NULL with errno (EAGAIN: the lock limit) on failure. */
void *mapped_alloc(size_t size, size_t align, bool mark) CLOAK_HIDDEN;
/* p is in a mapped allocation's reservation: checks, zeroes, frees. */
void mapped_free(void *p) CLOAK_HIDDEN;
size_t mapped_size(const void *p) CLOAK_HIDDEN;
bool mapped_marked(const void *p) CLOAK_HIDDEN;
/* Alignment (1: guarded) and protection mode (CLOAK_SECRET_*) of p. */
void mapped_kind(const void *p, size_t *align, int *mode) CLOAK_HIDDEN;
int mapped_protect(void *p, int mode) CLOAK_HIDDEN;
/* Copies the first n bytes of p out, whatever its protection mode. */
void mapped_read(const void *p, void *dst, size_t n) CLOAK_HIDDEN;

/* True while a mapped secret is live. */
bool mapped_busy(void) CLOAK_HIDDEN;
/* Unmaps the mappings kept for reuse, if no mapped secret is live (or
 * always, with `always`). */
void mapped_release_cache(bool always) CLOAK_HIDDEN;

struct mapped_counts {
	uint64_t live, live_bytes, allocs, frees, cached;
};
void mapped_counts(struct mapped_counts *out) CLOAK_HIDDEN;

/* Fork: the lock is held across fork() and the reuse cache emptied first, so
 * that no child copies free memory. */
void mapped_fork_prepare(void) CLOAK_HIDDEN;
void mapped_fork_parent(void) CLOAK_HIDDEN;
void mapped_fork_child(int fork_mode) CLOAK_HIDDEN;

#endif

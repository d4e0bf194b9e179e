/* SPDX-License-Identifier: ISC */
/*
 * When libcloak gives its memory back once no secret is live (the idle
 * release): IDLE_RELEASE_MS after the free that left nothing live, by a
 * helper thread. Uses pool.h and mapped.h; api.c and lifecycle.c call it.
 */
#ifndef CLOAK_LIBCLOAK_IDLE_H
#define CLOAK_LIBCLOAK_IDLE_H

#include "core.h"

/* The bound: a process that freed its last secret holds no secret memory
 * (so no memfd_secret file blocks hibernation) this long after that free,
 * plus the time the helper thread takes to be scheduled and unmap. */
#define IDLE_RELEASE_MS 1000

/* After every successful allocation: starts the helper thread if none runs
 * (which happens only when new secret memory was just mapped), except in a
 * forked child. */
void idle_after_alloc(void) CLOAK_HIDDEN;
/* After every free: if no secret is live now, starts the delay (or, with no
 * helper thread, gives everything back at once). */
void idle_after_free(void) CLOAK_HIDDEN;

/* Gives everything back now if no secret is live, without waiting (tests
 * start from a clean slate with it). */
void idle_release_now(void) CLOAK_HIDDEN;

/* Fork (lifecycle.c): prepare first (gives everything back if no secret is
 * live, so no child copies free memory), parent and child last. */
void idle_fork_prepare(void) CLOAK_HIDDEN;
void idle_fork_parent(void) CLOAK_HIDDEN;
void idle_fork_child(void) CLOAK_HIDDEN;

#endif

/* SPDX-License-Identifier: ISC */
/*
 * libcloak's life in a process: start-up (settings from the environment,
 * keys, module set-up, fork handlers), fork, and exit. Uses every module
 * below it; only api.c and the front ends call it.
 */
#ifndef CLOAK_LIBCLOAK_LIFECYCLE_H
#define CLOAK_LIBCLOAK_LIFECYCLE_H

#include "core.h"

/* Runs once before anything else (thread-safe, cheap after the first call). */
void cloak_init(void) CLOAK_HIDDEN;
/* For the front ends, before cloak_init: the fork mode used when the
 * environment names none (CLOAK_SECRET_FORK_COPY for the preloads). */
void lifecycle_default_fork_mode(int mode) CLOAK_HIDDEN;

#endif

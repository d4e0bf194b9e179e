/* SPDX-License-Identifier: ISC */
/* Runtime-internal declarations (not for guests). */
#ifndef CLOAK_RT_H
#define CLOAK_RT_H

#include <stddef.h>
#include <stdint.h>

#include "cloak/abi.h"

#define RT_SHARED __attribute__((section(".data.shared"), aligned(64)))

extern const struct cloak_boot_info *rt_boot;

/* The heap on [heap_start, heap_end), the bounce pool from it, then
 * protection as configured. */
void rt_protect_init(void *heap_start, void *heap_end);
/* Flushes buffered console output. */
void rt_console_flush(void);
/* The bounce pool (shared pages): base and size in bytes. */
extern uint64_t rt_protection;
extern unsigned char *rt_bounce;
extern size_t rt_bounce_size;
/* Called by cloak_exit() before the guest ends, where set: the block
 * cache's queued writes go out (block_cache.c). */
extern void (*rt_exit_drain)(void);

#endif

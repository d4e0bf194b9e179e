/* SPDX-License-Identifier: ISC */
/*
 * block_io.c with the runtime's block cache off: every cloak_block_read
 * and cloak_block_write takes the inline one-call path and its window
 * test (cloak/block.h), which the cache hides wherever the CPU is native
 * (the cache is on there by default, docs/io.md).
 */
const unsigned cloak_config_block_cache_pages = 0;
#include "block_io.c"

/* SPDX-License-Identifier: ISC */
/* block_bench with protection off: the runtime passes buffers straight to
 * the monitor (for the --memory=shared rows of bench/io-bench). */
const int cloak_config_protect = 0;
#include "block_bench.c"

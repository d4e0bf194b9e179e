/* SPDX-License-Identifier: ISC */
/* Defaults of the guest configuration switches (cloak/guest.h). Weak, and
 * in a file of their own so the compiler cannot fold the defaults into the
 * code that reads them: a guest's own definition must win at link time. */
#include "cloak/guest.h"

__attribute__((weak)) const int cloak_config_protect = 1;
__attribute__((weak)) const unsigned cloak_config_bounce_pages = 64;
__attribute__((weak)) const unsigned cloak_config_block_cache_pages = 64;

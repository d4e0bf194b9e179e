/* SPDX-License-Identifier: ISC */
/* The guests' wipes of memory a request passed through: see wipe.h. */
#include "wipe.h"

#include <stdint.h>

#include "cloak/guest.h"

__attribute__((noinline)) void wipe_stack(void)
{
	uint8_t below[32 * 1024];
	wipe(below, sizeof below);
}

void wipe_bounce(size_t n)
{
	size_t size;
	void *b = cloak_bounce_area(&size);
	wipe(b, n < size ? n : size);
}

/* SPDX-License-Identifier: ISC */
/* Sleeps in one poll (default 300 ms, or argv[1] ms) and exits: while it
 * sleeps, a benchmark reads the monitor's memory map to tell guest pages
 * from the monitor's own. */
#include <stdlib.h>

#include "cloak/guest.h"

int main(int argc, char **argv)
{
	uint64_t ms = argc > 1 ? strtoull(argv[1], NULL, 10) : 300;
	uint64_t end = cloak_time_ns() + ms * 1000000ull;
	/* A poll may return early (nothing is waited for, but be safe). */
	for (uint64_t now = cloak_time_ns(); now < end; now = cloak_time_ns())
		cloak_poll(end - now, 0, NULL);
	return 0;
}

/* SPDX-License-Identifier: ISC */
/* A guest that opts out of protection with the documented switch: the
 * monitor may then read any of its pages, e.g. a console buffer that was
 * never shared. */
#include <stdio.h>

#include "cloak/guest.h"

const int cloak_config_protect = 0;

static struct cloak_hc_console blk __attribute__((section(".data.shared"), aligned(64)));
static char private_text[4096] __attribute__((aligned(4096))) = "written from an unshared page\n";

int main(void)
{
	printf("protection=%llu\n", (unsigned long long)cloak_protection());
	blk.buf = (uint64_t)(uintptr_t)private_text;
	blk.len = 30;
	long r = (long)cloak_hypercall(CLOAK_HC_CONSOLE, &blk);
	printf("ret=%ld\n", r);
	return 0;
}

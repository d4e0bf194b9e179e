/* SPDX-License-Identifier: ISC */
/*
 * Threat tests 1-3 (docs/threat-model.md): a guest that holds a secret in
 * private memory while the host attacks it.
 *
 *   threat_secret.elf TOKEN SECONDS [PAGES]
 *
 * The secret is "CLOAK-THREAT-" + TOKEN reversed + "-SECRET", built at run
 * time in a private page of .bss, so it is in no file and, reversed, not
 * in the monitor's command line either: a host process that finds it read
 * guest RAM. PAGES (default 0): private pages touched first, so the host
 * sees them faulted in (heap pages, at most 8192). Prints "ready" when the secret is in place, sleeps
 * in the monitor (POLL) for SECONDS, then checks the secret is unchanged
 * and prints "secret intact" (exit 0) or "secret changed" (exit 1).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloak/guest.h"
#include "cloak/heap.h"

#define SECRET_MAX 160
#define TOUCH_MAX 8192

static char secret_page[4096] __attribute__((aligned(4096)));

static void build_secret(char *out, const char *token)
{
	size_t n = strlen(token);
	if (n > SECRET_MAX - 32)
		n = SECRET_MAX - 32;
	strcpy(out, "CLOAK-THREAT-");
	char *p = out + strlen(out);
	for (size_t i = 0; i < n; i++)
		*p++ = token[n - 1 - i];
	strcpy(p, "-SECRET");
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		printf("usage: threat_secret.elf TOKEN SECONDS [PAGES]\n");
		return 2;
	}
	long seconds = strtol(argv[2], NULL, 10);
	long pages = argc > 3 ? strtol(argv[3], NULL, 10) : 0;
	if (pages > TOUCH_MAX)
		pages = TOUCH_MAX;
	/* Fresh heap pages the monitor never touched; one byte per page is
	 * enough to fault each in, and cheap under emulation. */
	unsigned char *touch = pages ? cloak_heap_alloc_pages((size_t)pages) : NULL;
	if (pages && !touch)
		cloak_abort_msg("no heap pages to touch");
	for (long i = 0; i < pages; i++)
		*(volatile unsigned char *)(touch + i * 4096) = (unsigned char)(i | 1);
	build_secret(secret_page, argv[1]);
	printf("ready: protection 0x%llx, secret of %zu bytes at 0x%llx, %ld pages touched\n",
	       (unsigned long long)cloak_protection(), strlen(secret_page),
	       (unsigned long long)(uintptr_t)secret_page, pages);
	uint64_t end = cloak_time_ns() + (uint64_t)seconds * 1000000000ull;
	while (cloak_time_ns() < end)
		cloak_poll(200000000ull, 0, NULL);
	char expect[SECRET_MAX];
	build_secret(expect, argv[1]);
	bool same = !strcmp(expect, secret_page);
	printf("secret %s\n", same ? "intact" : "changed");
	return same ? 0 : 1;
}

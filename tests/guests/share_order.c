/* SPDX-License-Identifier: ISC */
/*
 * Every order of SHARE, UNSHARE and PROTECT the ABI allows (docs/abi.md):
 * sharing is the guest's to arrange before PROTECT, in any order, and
 * UNSHARE may come before PROTECT as after it. The guest opts out of the
 * runtime's automatic protection, arranges its pages as argv[1] says,
 * protects, and then writes to the console from each page of its buffer:
 * a shared page's bytes appear (ret = the length), a private page's are
 * refused (ret=-3). Every call's result is printed as "NAME ret=N", so a
 * run under the device process and one under --no-device-isolation can be
 * compared line for line (tests/integration/differential.bats).
 *   unshare_first           UNSHARE pages never shared, then PROTECT
 *   share_unshare_protect   SHARE all four pages, UNSHARE the middle two, PROTECT
 *   reshare                 SHARE, UNSHARE, SHARE again, PROTECT
 *   unshare_after           SHARE all four, PROTECT, then UNSHARE the first
 *   unshare_window          UNSHARE the monitor window before PROTECT: refused
 */
#include <stdio.h>
#include <string.h>

#include "cloak/guest.h"
#include "raw_calls.h"

const int cloak_config_protect = 0;

#define PAGES 4
static char buf[PAGES][4096] __attribute__((aligned(4096)));

static void console_from_each_page(void)
{
	for (int i = 0; i < PAGES; i++) {
		char name[32];
		snprintf(name, sizeof name, "console_page%d", i);
		report(name, console((uintptr_t)buf[i], 8));
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	for (int i = 0; i < PAGES; i++)
		snprintf(buf[i], sizeof buf[i], "page%d.\n", i);
	uint64_t b = (uintptr_t)buf;
	if (!strcmp(mode, "unshare_first")) {
		report("unshare", share(CLOAK_HC_UNSHARE, b, PAGES));
	} else if (!strcmp(mode, "share_unshare_protect")) {
		report("share", share(CLOAK_HC_SHARE, b, PAGES));
		report("unshare", share(CLOAK_HC_UNSHARE, b + 4096, 2));
	} else if (!strcmp(mode, "reshare")) {
		report("share", share(CLOAK_HC_SHARE, b, PAGES));
		report("unshare", share(CLOAK_HC_UNSHARE, b, PAGES));
		report("share_again", share(CLOAK_HC_SHARE, b, PAGES));
	} else if (!strcmp(mode, "unshare_after")) {
		report("share", share(CLOAK_HC_SHARE, b, PAGES));
	} else if (!strcmp(mode, "unshare_window")) {
		report("unshare_window", share(CLOAK_HC_UNSHARE, CLOAK_GPA_MONITOR_WINDOW, 1));
	} else {
		printf("unknown mode %s\n", mode);
		return 2;
	}
	report("protect", cloak_protect());
	if (!strcmp(mode, "unshare_after"))
		report("unshare", share(CLOAK_HC_UNSHARE, b, 1));
	console_from_each_page();
	return 0;
}

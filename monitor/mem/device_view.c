/* SPDX-License-Identifier: ISC */
/*
 * The device process's guest memory (device_view.h): the mapping it
 * inherited from the runner and nothing else, of which it unmaps what the
 * guest no longer shares.
 */
#include "device_view.h"

#include <unistd.h>

#include "guestmem_impl.h"
#include "test_hooks.h"

void gm_device_adopt(struct guestmem *gm)
{
	/* Only the mapping inherited from the runner stays: no descriptor to
	 * map a page again, no page table to read. */
	int *fds[] = { &gm->mb.fd, &gm->mb.pagemap_fd };
	for (unsigned i = 0; i < sizeof fds / sizeof fds[0]; i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

void gm_device_protect(struct guestmem *gm)
{
	if (gm->protect)
		return;
	gm->protect = true;
	/* given_up: from now on an unshared page is unmapped for good and
	 * nothing outside the window fixed now can be shared again. */
	gm->mb.given_up = true;
	if (!test_hooks_device_keeps("private"))
		gm_for_each_run(gm, false, gm_unmap_run);
}

enum gm_status gm_device_share(struct guestmem *gm, gpa_t g, uint64_t npages)
{
	/* Once protected, the window this process maps is fixed. */
	return gm_share_in_view(gm, g, npages, gm->protect);
}

enum gm_status gm_device_unshare(struct guestmem *gm, gpa_t g, uint64_t npages)
{
	return gm_unshare_in_view(gm, g, npages,
				  gm->protect && !test_hooks_device_keeps("unshared"));
}

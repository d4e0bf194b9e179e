/* SPDX-License-Identifier: ISC */
/* --dump-shared; see dump_shared.h. */
#include "dump_shared.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cloak/abi.h"

int dump_shared_open(const char *path, struct fail *f)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return fail_set(f, CLOAK_EXIT_RESOURCE, "--dump-shared: cannot create %s: %s%s",
				path, strerror(errno),
				errno == EEXIST ? " (it is never overwritten: remove it or choose "
						  "another name)" : "");
	return fd;
}

struct dump {
	int fd;
	uint64_t pages;
};

static void dump_page(void *ctx, uint64_t gpa_v, const void *page)
{
	struct dump *d = ctx;
	(void)gpa_v;
	if (d->fd >= 0 && write(d->fd, page, CLOAK_PAGE_SIZE) != (ssize_t)CLOAK_PAGE_SIZE) {
		close(d->fd);
		d->fd = -1;
	} else if (d->fd >= 0) {
		d->pages++;
	}
}

uint64_t dump_shared_write(int fd, const char *path, struct guestmem *gm)
{
	/* Raw pages in address order, so a secret straddling two adjacent
	 * shared pages stays contiguous for a scanner. */
	struct dump d = { fd, 0 };
	if (gm)
		gm_for_each_shared_page(gm, dump_page, &d);
	if (d.fd < 0 || close(d.fd))
		fprintf(stderr, "cloak: --dump-shared: cannot write %s: %s\n", path,
			strerror(errno));
	return d.pages;
}

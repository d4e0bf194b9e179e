/* SPDX-License-Identifier: ISC */
/* The runner's check of what the device process maps; see device_maps.h. */
#include "device_maps.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <unistd.h>

#include "cloak/abi.h"
#include "mem/guestmem.h"

void device_maps_identify(struct guestmem *gm, struct device_maps_file *id)
{
	struct gm_slot slot;
	gm_slot(gm, &slot);
	memset(id, 0, sizeof *id);
	id->base = (uintptr_t)slot.userspace_addr;
	id->size = slot.size;
	uint64_t dev;
	if (gm_backing_id(gm, &dev, &id->ino)) {
		id->have_id = true;
		id->dev_major = major((dev_t)dev);
		id->dev_minor = minor((dev_t)dev);
	}
}

struct maps_line {
	uint64_t start, end, pgoff, ino;
	unsigned major, minor;
};

/* "start-end perms offset major:minor inode [path]": the kernel's format;
 * the path (the only free text) is not read. */
static bool parse(const char *line, struct maps_line *m)
{
	char perms[8];
	return sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64, &m->start,
		      &m->end, perms, &m->pgoff, &m->major, &m->minor, &m->ino) == 7 &&
	       m->start < m->end;
}

/* One mapping: NULL if it holds no guest page but shared ones, else why. */
static const char *judge(const struct maps_line *m, struct guestmem *gm,
			 const struct device_maps_file *id)
{
	bool same_file = id->have_id && m->ino == id->ino && m->major == id->dev_major &&
			 m->minor == id->dev_minor;
	bool over_range = m->start < id->base + id->size && m->end > id->base;
	/* Anonymous memory (inode 0) in a hole the device process unmapped is
	 * its own heap; another file there cannot be guest memory if the
	 * backing file is known, and is taken for it if not. */
	if (!same_file && (!over_range || m->ino == 0 || id->have_id))
		return NULL;
	uint64_t len = m->end - m->start, first;
	if (same_file)
		first = m->pgoff; /* the file offset is the guest address */
	else
		first = m->start - id->base;
	uint64_t end;
	if (__builtin_add_overflow(first, len, &end) || end > id->size)
		return "maps beyond guest memory";
	if (!gm_is_shared(gm, (gpa_t){ first }, len))
		return "maps a private guest page";
	return NULL;
}

int device_maps_check(int maps_fd, struct guestmem *gm, const struct device_maps_file *id,
		      char *why, size_t why_len)
{
	/* Streamed through a fixed buffer: the runner's sandbox allows only
	 * pread, and many unshared holes make many lines. */
	static char buf[16384];
	size_t have = 0;
	uint64_t off = 0;
	for (;;) {
		ssize_t n = pread(maps_fd, buf + have, sizeof buf - 1 - have, (off_t)off);
		if (n < 0) {
			snprintf(why, why_len, "cannot read its maps: %s", strerror(errno));
			return -1;
		}
		off += (uint64_t)n;
		have += (size_t)n;
		buf[have] = '\0';
		char *line = buf, *nl;
		while ((nl = strchr(line, '\n')) || (n == 0 && *line)) {
			if (nl)
				*nl = '\0';
			struct maps_line m;
			const char *bad = NULL;
			if (!parse(line, &m))
				bad = "has a maps line cloak cannot read";
			else
				bad = judge(&m, gm, id);
			if (bad) {
				snprintf(why, why_len, "%s: %.120s", bad, line);
				return -1;
			}
			line = nl ? nl + 1 : line + strlen(line);
		}
		if (n == 0)
			return 0;
		have = (size_t)(buf + have - line);
		if (have == sizeof buf - 1) {
			snprintf(why, why_len, "has a maps line longer than %zu bytes", have);
			return -1;
		}
		memmove(buf, line, have);
	}
}

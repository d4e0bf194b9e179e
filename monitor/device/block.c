/* SPDX-License-Identifier: ISC */
/* Block devices; see block.h. */
#include "block.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spec.h"

int block_parse(const char *spec, struct block_dev *b, struct fail *f)
{
	const char *rest;
	memset(b, 0, sizeof *b);
	b->fd = -1;
	b->sector_size = 512;
	if (spec_name(spec, "--block", b->name, &rest, f))
		return -1;
	/* PATH[,ro][,sector=512|4096]: options follow the first comma, so a
	 * path cannot contain commas. */
	const char *comma = strchr(rest, ',');
	size_t plen = comma ? (size_t)(comma - rest) : strlen(rest);
	if (plen == 0 || plen >= sizeof b->path)
		return fail_set(f, CLOAK_EXIT_USAGE, "--block '%s': expected "
				"NAME=PATH[,ro][,sector=512|4096] with a path of 1-%zu characters",
				spec, sizeof b->path - 1);
	memcpy(b->path, rest, plen);
	const char *opts = comma ? comma + 1 : NULL, *opt;
	size_t olen;
	while (spec_next_option(&opts, &opt, &olen)) {
		if (olen == 2 && !strncmp(opt, "ro", 2))
			b->read_only = true;
		else if (olen == 10 && !strncmp(opt, "sector=512", 10))
			b->sector_size = 512;
		else if (olen == 11 && !strncmp(opt, "sector=4096", 11))
			b->sector_size = 4096;
		else
			return fail_set(f, CLOAK_EXIT_USAGE, "--block '%s': unknown option '%.*s' "
					"(known: ro, sector=512, sector=4096)", spec, (int)olen, opt);
	}
	return 0;
}

/* The device among the n opened before b that attached the same file, if
 * any: flock(2) refuses a second lock even to the process that holds the
 * first (each open(2) is a lock of its own). */
static const struct block_dev *same_file(const struct stat *st, const struct block_dev *opened,
					 unsigned n)
{
	struct stat o;
	for (unsigned i = 0; i < n; i++)
		if (!fstat(opened[i].fd, &o) && o.st_dev == st->st_dev && o.st_ino == st->st_ino)
			return &opened[i];
	return NULL;
}

int block_open(struct block_dev *b, const struct block_dev *opened, unsigned nopened,
	       struct fail *f)
{
	/* O_NONBLOCK: a FIFO must not block the monitor in open() before it
	 * can be refused; cleared again for the image's real I/O. */
	b->fd = open(b->path, (b->read_only ? O_RDONLY : O_RDWR) | O_NONBLOCK | O_CLOEXEC);
	if (b->fd < 0)
		return fail_set(f, CLOAK_EXIT_RESOURCE, "--block %s: cannot open %s%s: %s",
				b->name, b->path,
				!b->read_only && (errno == EACCES || errno == EROFS)
					? " for writing (add ,ro to attach it read-only)" : "",
				strerror(errno));
	struct stat st;
	if (fstat(b->fd, &st) || !(S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)))
		return fail_set(f, CLOAK_EXIT_RESOURCE, "--block %s: %s is not a regular file or "
				"block device", b->name, b->path);
	int fl = fcntl(b->fd, F_GETFL);
	if (fl < 0 || fcntl(b->fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
		return fail_set(f, CLOAK_EXIT_RESOURCE, "--block %s: %s: %s", b->name, b->path,
				strerror(errno));
	/* Two VMs writing one image would corrupt it: take a lock. */
	if (flock(b->fd, (b->read_only ? LOCK_SH : LOCK_EX) | LOCK_NB)) {
		const struct block_dev *twin = same_file(&st, opened, nopened);
		if (twin)
			return fail_set(f, CLOAK_EXIT_USAGE, "--block %s: %s is already attached "
					"as --block %s in this run: an image is attached read-write "
					"once, or read-only (,ro) any number of times", b->name,
					b->path, twin->name);
		return fail_set(f, CLOAK_EXIT_RESOURCE, "--block %s: %s is in use by another "
				"process", b->name, b->path);
	}
	off_t end = lseek(b->fd, 0, SEEK_END);
	if (end < (off_t)b->sector_size)
		return fail_set(f, CLOAK_EXIT_RESOURCE, "--block %s: %s is %lld bytes, smaller "
				"than one %u-byte sector", b->name, b->path,
				(long long)(end < 0 ? 0 : end), b->sector_size);
	/* A trailing partial sector is never exposed to the guest. */
	b->capacity = (uint64_t)end - (uint64_t)end % b->sector_size;
	return 0;
}

void block_close(struct block_dev *b)
{
	if (b->fd >= 0)
		close(b->fd);
	b->fd = -1;
}

static int64_t errno_to_abi(int e)
{
	switch (e) {
	case EFAULT: return -CLOAK_EFAULT;
	case EACCES: return -CLOAK_EACCES;
	default: return -CLOAK_EIO; /* EFBIG (file size limit), ENOSPC, EIO, ... */
	}
}

int64_t block_rw(struct block_dev *b, struct guestmem *gm, uint64_t op, uint64_t offset,
		 gpa_t buf, uint64_t len)
{
	uint64_t end;
	if (len == 0 || len % b->sector_size || offset % b->sector_size)
		return -CLOAK_EINVAL;
	if (len > CLOAK_BLOCK_IO_MAX)
		return -CLOAK_E2BIG;
	if (__builtin_add_overflow(offset, len, &end) || end > b->capacity)
		return -CLOAK_ERANGE;
	if (op == CLOAK_BLOCK_WRITE && b->read_only)
		return -CLOAK_EROFS;
	enum gm_status s = gm_check(gm, buf, len);
	if (s != GM_OK)
		return gm_status_abi(s);
	for (uint64_t done = 0; done < len;) {
		gpa_t g = gpa(buf.v + done);
		int64_t off = (int64_t)(offset + done);
		uint64_t n;
		s = op == CLOAK_BLOCK_READ ? gm_pread(gm, b->fd, g, len - done, off, &n)
					   : gm_pwrite(gm, b->fd, g, len - done, off, &n);
		if (s == GM_EIO && errno == EINTR)
			continue;
		if (s == GM_EIO)
			return errno_to_abi(errno);
		if (s != GM_OK)
			return gm_status_abi(s);
		if (n == 0) /* the image shrank under us since start-up */
			return -CLOAK_EIO;
		done += n;
	}
	return 0;
}

int64_t block_flush(struct block_dev *b)
{
	if (b->read_only)
		return 0;
	return fdatasync(b->fd) ? -CLOAK_EIO : 0;
}

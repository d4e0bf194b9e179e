/* SPDX-License-Identifier: ISC */
/* The guest image file; see image.h. */
#include "image.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "guest_limits.h"

void *image_read(const char *path, size_t *len, struct fail *f)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0) {
		fail_set(f, CLOAK_EXIT_BADIMAGE, "cannot open guest %s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		fail_set(f, CLOAK_EXIT_BADIMAGE, "guest %s is not a regular file", path);
		close(fd);
		return NULL;
	}
	if ((uint64_t)st.st_size > CLOAK_IMAGE_FILE_MAX) {
		fail_set(f, CLOAK_EXIT_BADIMAGE, "guest %s is %lld bytes, larger than the %llu MiB "
			 "cloak loads", path, (long long)st.st_size, CLOAK_IMAGE_FILE_MAX >> 20);
		close(fd);
		return NULL;
	}
	size_t n = (size_t)st.st_size, done = 0;
	unsigned char *buf = malloc(n ? n : 1);
	while (buf && done < n) {
		ssize_t r = read(fd, buf + done, n - done);
		if (r <= 0)
			break;
		done += (size_t)r;
	}
	close(fd);
	if (!buf || done != n) {
		fail_set(f, CLOAK_EXIT_BADIMAGE, "cannot read guest %s", path);
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}

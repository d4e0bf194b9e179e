/* SPDX-License-Identifier: ISC */
/* One descriptor over a Unix socket; see fd_pass.h. */
#include "fd_pass.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

union one_fd {
	struct cmsghdr h;
	char buf[CMSG_SPACE(sizeof(int))];
};

int fd_pass_send(int sock, const void *data, size_t len, int fd)
{
	struct iovec iov = { (void *)data, len };
	union one_fd c;
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (fd >= 0) {
		memset(&c, 0, sizeof c);
		m.msg_control = c.buf;
		m.msg_controllen = sizeof c.buf;
		struct cmsghdr *h = CMSG_FIRSTHDR(&m);
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(h), &fd, sizeof fd);
	}
	ssize_t n;
	while ((n = sendmsg(sock, &m, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	if (n < 0)
		return -1;
	if ((size_t)n != len) {
		errno = EPIPE;
		return -1;
	}
	return 0;
}

int fd_pass_recv(int sock, void *data, size_t len, int *fd)
{
	*fd = -1;
	struct iovec iov = { data, len };
	union one_fd c;
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf,
			    .msg_controllen = sizeof c.buf };
	ssize_t n;
	while ((n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
		;
	struct cmsghdr *h = n >= 0 ? CMSG_FIRSTHDR(&m) : NULL;
	if (h && h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS &&
	    h->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(fd, CMSG_DATA(h), sizeof *fd);
	if (n < 0)
		return -1;
	if ((size_t)n != len) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		errno = EPIPE;
		return -1;
	}
	return 0;
}

int fd_pass_own_maps(int sock)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	int r = fd >= 0 ? fd_pass_send(sock, "m", 1, fd) : -1;
	if (fd >= 0)
		close(fd);
	close(sock);
	return r;
}

/* SPDX-License-Identifier: ISC */
/* memfd_secret and memlock probing; see secretmem.h. */
#include "secretmem.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_memfd_secret
#define SYS_memfd_secret 447 /* x86_64; absent from older libc headers */
#endif
#define CAP_IPC_LOCK_BIT 14

int secretmem_fd(void)
{
	return (int)syscall(SYS_memfd_secret, (unsigned int)O_CLOEXEC);
}

static bool has_cap_ipc_lock(void);

#ifndef GRND_INSECURE
#define GRND_INSECURE 0x0004 /* Linux 5.6; memfd_secret needs 5.14 */
#endif
#define POPULATE_PAGE 4096

/* One byte a page, written by getrandom(2): it needs no descriptor (so it
 * works in a chroot or a sandbox that allows what libc's own random calls
 * need), never blocks with GRND_INSECURE, and its copy to user space fails
 * with EFAULT where a store would be a SIGBUS. The byte is zeroed again by
 * a store, which can no longer fault. */
int secretmem_populate(void *p, size_t len)
{
	for (size_t off = 0; off < len; off += POPULATE_PAGE) {
		volatile unsigned char *page = (unsigned char *)p + off;
		ssize_t n;
		do
			n = getrandom((void *)page, 1, GRND_INSECURE);
		while (n < 0 && errno == EINTR);
		if (n != 1) {
			if (n >= 0 || errno == EFAULT)
				errno = EAGAIN;
			return -1;
		}
		*page = 0;
	}
	return 0;
}

void *secretmem_map(size_t len, int *fd_out)
{
	int fd = secretmem_fd();
	if (fd < 0)
		return NULL;
	if (ftruncate(fd, (off_t)len) != 0) {
		int e = errno;
		close(fd);
		errno = e;
		return NULL;
	}
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		int e = errno;
		close(fd);
		errno = e;
		return NULL;
	}
	/* Children must never inherit secrets (MADV_WIPEONFORK is EINVAL here). */
	if (madvise(p, len, MADV_DONTFORK) != 0 ||
	    (!has_cap_ipc_lock() && secretmem_populate(p, len) != 0)) {
		int e = errno;
		munmap(p, len);
		close(fd);
		errno = e;
		return NULL;
	}
	if (fd_out)
		*fd_out = fd;
	else
		close(fd);
	return p;
}

/* Threads may race to probe; each stores the same answer. */
bool secretmem_supported(void)
{
	static int cached = -1;
	int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
	if (v < 0) {
		int fd = secretmem_fd();
		v = fd >= 0;
		if (fd >= 0)
			close(fd);
		__atomic_store_n(&cached, v, __ATOMIC_RELAXED);
	}
	return v == 1;
}

/* capget(2) rather than parsing /proc/self/status: it is on the monitor's
 * start-up path, where every syscall shows in the boot time. */
static bool has_cap_ipc_lock(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct data[2];
	memset(data, 0, sizeof data);
	if (syscall(SYS_capget, &hdr, data) != 0)
		return false;
	return (data[0].effective >> CAP_IPC_LOCK_BIT) & 1;
}

static uint64_t rlim_bytes(rlim_t r)
{
	return r == RLIM_INFINITY ? UINT64_MAX : (uint64_t)r;
}

void memlock_query(struct memlock_info *out)
{
	struct rlimit rl = { 0, 0 };
	getrlimit(RLIMIT_MEMLOCK, &rl);
	out->soft = rlim_bytes(rl.rlim_cur);
	out->hard = rlim_bytes(rl.rlim_max);
	out->cap_ipc_lock = has_cap_ipc_lock();
}

bool memlock_ensure(uint64_t bytes)
{
	struct memlock_info mi;
	memlock_query(&mi);
	if (mi.soft >= bytes || mi.cap_ipc_lock)
		return true;
	if (mi.hard < bytes)
		return false;
	struct rlimit rl = { .rlim_cur = (rlim_t)bytes, .rlim_max = (rlim_t)mi.hard };
	if (mi.hard == UINT64_MAX)
		rl.rlim_max = RLIM_INFINITY;
	return setrlimit(RLIMIT_MEMLOCK, &rl) == 0;
}

int64_t direct_map_splits(void)
{
	FILE *f = fopen("/proc/vmstat", "re");
	if (!f)
		return -1;
	char name[64];
	unsigned long long v;
	int64_t sum = 0;
	int seen = 0;
	while (fscanf(f, "%63s %llu", name, &v) == 2) {
		if (!strcmp(name, "direct_map_level2_splits") ||
		    !strcmp(name, "direct_map_level3_splits")) {
			sum += (int64_t)v;
			seen++;
		}
	}
	fclose(f);
	return seen ? sum : -1;
}

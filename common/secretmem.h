/* SPDX-License-Identifier: ISC */
/*
 * memfd_secret and the host facts around it (RLIMIT_MEMLOCK, CAP_IPC_LOCK,
 * direct-map split counters). Shared by the monitor's `secret` memory
 * backend and by libcloak, so both probe and report the host the same way.
 */
#ifndef CLOAK_COMMON_SECRETMEM_H
#define CLOAK_COMMON_SECRETMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* memfd_secret(2) with FD_CLOEXEC; -1 and errno on failure (ENOSYS when the
 * kernel lacks it or it is disabled). */
int secretmem_fd(void);

/* A MAP_SHARED secret mapping of `len` bytes (a page multiple), marked
 * MADV_DONTFORK so children never inherit it. Without CAP_IPC_LOCK every
 * page is faulted in (secretmem_populate), so that no later store can be a
 * SIGBUS; with it the kernel applies no lock limit to secret memory, on
 * either accounting, and pages are faulted in when first used (faulting in
 * 64 MiB costs about a second on a nested host). If fd_out is non-NULL the memfd stays open and is
 * returned there; otherwise it is closed (the mapping keeps the memory
 * alive). Returns NULL with errno set: ENOSYS (no memfd_secret), EAGAIN
 * (RLIMIT_MEMLOCK too small, whether the kernel said so at mmap or at the
 * first touch of a page), ENOMEM. */
void *secretmem_map(size_t len, int *fd_out);

/* Faults in every page of the writable secret mapping [p, p + len) (page
 * aligned) through a system call, so that running out of RLIMIT_MEMLOCK is
 * an error here and never a SIGBUS later. Some kernels charge secret pages
 * to the lock limit when the mapping is made (mmap fails with EAGAIN);
 * others charge each page, per user, when it is first touched: a store
 * past the limit is then a SIGBUS, MADV_POPULATE_WRITE is refused (EINVAL,
 * secret pages are not GUP-able), but a fault taken inside a system call
 * makes it fail with EFAULT. The pages read zero afterwards, as fresh
 * secret pages do. Returns 0, or -1 with errno EAGAIN (a page could not be
 * had: the lock limit) or the system call's own error. */
int secretmem_populate(void *p, size_t len);

/* True when memfd_secret can be created on this host (cached). */
bool secretmem_supported(void);

struct memlock_info {
	uint64_t soft;      /* RLIMIT_MEMLOCK soft limit in bytes (UINT64_MAX = unlimited) */
	uint64_t hard;
	bool cap_ipc_lock;  /* effective CAP_IPC_LOCK: kernel skips the limit */
};
void memlock_query(struct memlock_info *out);

/* Whether `bytes` more locked memory is allowed, raising the soft limit up to
 * the hard limit if that is what it takes. */
bool memlock_ensure(uint64_t bytes);

/* Sum of direct_map_level2_splits and level3 from /proc/vmstat; -1 if the
 * counters are absent. */
int64_t direct_map_splits(void);

#endif

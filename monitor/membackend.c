/*
 * Guest RAM backends:
 *  shared  memfd, MAP_SHARED: no protection, for comparison and debugging;
 *  secret  memfd_secret: out of the kernel direct map, refused to GUP, not
 *          dumped, not inherited (MADV_DONTFORK);
 *  gmem    guest_memfd (see kvmcaps.c for what the host offers);
 *  anon    anonymous memory, for unit tests and fuzzing only.
 */
#include "membackend.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "cloak/abi.h"
#include "gmem.h"
#include "secretmem.h"

bool membackend_keep_fd;

const char *gm_backend_name(enum gm_backend kind)
{
	switch (kind) {
	case GM_BACKEND_SHARED: return "shared";
	case GM_BACKEND_SECRET: return "secret";
	case GM_BACKEND_GMEM: return "gmem";
	case GM_BACKEND_ANON: return "anon";
	}
	return "?";
}

static int map_memfd(struct membacking *mb, char *err, size_t errlen, int *st)
{
	mb->fd = memfd_create("cloak-guest", MFD_CLOEXEC);
	if (mb->fd < 0 || ftruncate(mb->fd, (off_t)mb->size) != 0) {
		snprintf(err, errlen, "cannot create guest memory (memfd, %llu MiB): %s",
			 (unsigned long long)(mb->size >> 20), strerror(errno));
		*st = CLOAK_EXIT_INTERNAL;
		return -1;
	}
	void *p = mmap(NULL, mb->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE,
		       mb->fd, 0);
	if (p == MAP_FAILED) {
		snprintf(err, errlen, "cannot map guest memory (%llu MiB): %s",
			 (unsigned long long)(mb->size >> 20), strerror(errno));
		*st = CLOAK_EXIT_INTERNAL;
		return -1;
	}
	mb->base = p;
	madvise(p, mb->size, MADV_DONTFORK);
	return 0;
}

static int map_secret(struct membacking *mb, char *err, size_t errlen, int *st)
{
	unsigned long long mib = (unsigned long long)(mb->size >> 20);
	if (!secretmem_supported()) { /* cached: one memfd_secret for the probe */
		snprintf(err, errlen,
			 "memfd_secret is not available on this kernel (needs Linux 5.14+, "
			 "secretmem enabled): use --memory=gmem or, without protection, "
			 "--memory=shared");
		*st = CLOAK_EXIT_NOHOST;
		return -1;
	}
	if (!memlock_ensure(mb->size)) {
		struct memlock_info mi;
		memlock_query(&mi);
		snprintf(err, errlen,
			 "RLIMIT_MEMLOCK (%llu KiB) is below the %llu MiB of secret guest "
			 "memory: raise it (ulimit -l %llu), lower --mem, or use "
			 "--memory=shared without protection",
			 (unsigned long long)(mi.soft >> 10), mib,
			 (unsigned long long)(mb->size >> 10));
		*st = CLOAK_EXIT_NOHOST;
		return -1;
	}
	/* The descriptor is closed once mapped: a process allowed to take
	 * another's descriptors (pidfd_getfd) would otherwise map guest RAM
	 * and read it like the monitor. Tests may keep it to inspect the wipe. */
	void *p = secretmem_map(mb->size, membackend_keep_fd ? &mb->fd : NULL);
	if (!p) {
		if (errno == EAGAIN || errno == ENOMEM)
			snprintf(err, errlen,
				 "cannot lock %llu MiB of secret guest memory (%s): raise "
				 "ulimit -l or lower --mem",
				 mib, strerror(errno));
		else
			snprintf(err, errlen, "memfd_secret failed: %s: use --memory=gmem "
				 "or --memory=shared", strerror(errno));
		*st = CLOAK_EXIT_NOHOST;
		return -1;
	}
	mb->base = p;
	/* Secret pages can only be filled through this mapping (GUP refuses
	 * them, and they cannot be swapped), so the page table says which ones
	 * the wipe must reach. Opened now: the sandbox forbids open later. */
	mb->pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	/* The kernel creates secretmem only where it can take pages out of
	 * the direct map (can_set_direct_map()), and removes each page as it
	 * is faulted in: that memfd_secret succeeded is the evidence. GUP
	 * refusal is checked here and now: process_vm_readv on our own guest
	 * RAM must fail with EFAULT (cheap: GUP refuses the VMA before
	 * faulting anything in). */
	mb->protections = CLOAK_PROT_CHECKED_ACCESS | CLOAK_PROT_NO_DIRECT_MAP;
	char probe;
	struct iovec local = { &probe, 1 }, remote = { p, 1 };
	errno = 0;
	bool gup_refused = process_vm_readv(getpid(), &local, 1, &remote, 1, 0) < 0 &&
			   errno == EFAULT;
	if (gup_refused)
		mb->protections |= CLOAK_PROT_NO_GUP;
	snprintf(mb->describe, sizeof mb->describe,
		 "memfd_secret: out of the kernel direct map (kernel-enforced), %s, not "
		 "dumped, not inherited; still mapped in this monitor (KVM here needs it)",
		 gup_refused ? "GUP refused (checked: process_vm_readv EFAULT)"
			     : "GUP NOT refused (process_vm_readv went through)");
	return 0;
}

static int map_anon(struct membacking *mb, char *err, size_t errlen, int *st)
{
	void *p = mmap(NULL, mb->size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		snprintf(err, errlen, "cannot map %llu MiB: %s",
			 (unsigned long long)(mb->size >> 20), strerror(errno));
		*st = CLOAK_EXIT_INTERNAL;
		return -1;
	}
	mb->base = p;
	return 0;
}

int membackend_create(struct membacking *mb, enum gm_backend kind, uint64_t size,
		      int kvm_vm_fd, char *err, size_t errlen, int *exit_status)
{
	memset(mb, 0, sizeof *mb);
	mb->kind = kind;
	mb->size = size;
	mb->fd = -1;
	mb->pagemap_fd = -1;
	int r;
	switch (kind) {
	case GM_BACKEND_SHARED:
		r = map_memfd(mb, err, errlen, exit_status);
		mb->protections = CLOAK_PROT_CHECKED_ACCESS;
		snprintf(mb->describe, sizeof mb->describe,
			 "plain memfd: NO protection from the host kernel or other processes");
		break;
	case GM_BACKEND_SECRET: r = map_secret(mb, err, errlen, exit_status); break;
	case GM_BACKEND_GMEM: {
		struct gmem_plan plan;
		r = gmem_map(kvm_vm_fd, size, &mb->fd, (void **)&mb->base, &plan, err, errlen,
			     exit_status);
		mb->is_gmem = r == 0;
		mb->gmem_flags = plan.flags;
		mb->convertible = r == 0 && plan.private_possible;
		mb->vm_fd = kvm_vm_fd;
		mb->protections = CLOAK_PROT_CHECKED_ACCESS |
				  (plan.no_direct_map ? CLOAK_PROT_NO_DIRECT_MAP : 0);
		snprintf(mb->describe, sizeof mb->describe,
			 "guest_memfd (flags 0x%llx): %s; %s",
			 (unsigned long long)plan.flags,
			 plan.no_direct_map ? "out of the kernel direct map"
					    : "in the kernel direct map (no NO_DIRECT_MAP here)",
			 plan.private_possible
				 ? "private pages converted in KVM once the guest protects them"
				 : "reachable by GUP and mapped in this monitor (this host "
				   "offers no private memory attributes)");
		break;
	}
	case GM_BACKEND_ANON: r = map_anon(mb, err, errlen, exit_status); break;
	default:
		snprintf(err, errlen, "unknown memory backend %d", (int)kind);
		*exit_status = CLOAK_EXIT_INTERNAL;
		r = -1;
	}
	if (r != 0) {
		if (mb->fd >= 0)
			close(mb->fd);
		mb->fd = -1;
		mb->base = NULL;
	}
	return r;
}

/* Which pages of [off, off+n pages) may hold data: bit 0 of vec[i]. From
 * /proc/self/pagemap where the backend allows (7x cheaper than mincore
 * here: it skips unpopulated page tables wholesale), else from mincore.
 * Returns -1 if neither can tell. */
int membackend_resident(struct membacking *mb, uint64_t off, uint64_t n, unsigned char *vec)
{
	if (mb->pagemap_fd >= 0) {
		uint64_t ent[1024]; /* 8 KiB: one read per 4 MiB of guest memory */
		for (uint64_t i = 0; i < n; i += 1024) {
			uint64_t k = n - i < 1024 ? n - i : 1024;
			off_t at = (off_t)(((uintptr_t)mb->base + off) / CLOAK_PAGE_SIZE + i) * 8;
			if (pread(mb->pagemap_fd, ent, k * 8, at) != (ssize_t)(k * 8))
				goto use_mincore;
			for (uint64_t j = 0; j < k; j++)
				vec[i + j] = (unsigned char)(ent[j] >> 63); /* present */
		}
		return 0;
	}
use_mincore:
	return mincore(mb->base + off, n * CLOAK_PAGE_SIZE, vec);
}

/* Wipes the pages that may hold data. Pages never touched are not there
 * and read as zero already; skipping them keeps release cheap for large,
 * sparse guests. */
/* A memfd knows its own data ranges, swapped-out pages included: wipe
 * exactly those (SEEK_DATA/SEEK_HOLE walk the page cache, not every page). */
static int64_t wipe_memfd_data(struct membacking *mb)
{
	uint64_t wiped = 0;
	off_t off = 0;
	for (;;) {
		off_t start = lseek(mb->fd, off, SEEK_DATA);
		if (start < 0)
			return errno == ENXIO ? (int64_t)wiped : -1; /* ENXIO: no more data */
		off_t end = lseek(mb->fd, start, SEEK_HOLE);
		if (end < 0 || (uint64_t)end > mb->size)
			end = (off_t)mb->size;
		explicit_bzero(mb->base + start, (size_t)(end - start));
		wiped += (uint64_t)(end - start);
		if ((uint64_t)end >= mb->size)
			return (int64_t)wiped;
		off = end;
	}
}

uint64_t membackend_wipe(struct membacking *mb)
{
	if (!mb->base)
		return 0;
	if (mb->kind == GM_BACKEND_SHARED && mb->fd >= 0) {
		int64_t w = wipe_memfd_data(mb);
		if (w >= 0)
			return (uint64_t)w;
	}
	const uint64_t chunk_pages = 4096; /* 16 MiB at a time */
	unsigned char vec[4096];
	uint64_t wiped = 0;
	for (uint64_t off = 0; off < mb->size; off += chunk_pages * CLOAK_PAGE_SIZE) {
		uint64_t len = mb->size - off;
		if (len > chunk_pages * CLOAK_PAGE_SIZE)
			len = chunk_pages * CLOAK_PAGE_SIZE;
		uint64_t n = len / CLOAK_PAGE_SIZE;
		if (membackend_resident(mb, off, n, vec) != 0) {
			explicit_bzero(mb->base + off, len); /* cannot tell: wipe it all */
			wiped += len;
			continue;
		}
		for (uint64_t i = 0; i < n; i++) {
			uint64_t run = 0;
			while (i + run < n && (vec[i + run] & 1))
				run++;
			if (run) {
				explicit_bzero(mb->base + off + i * CLOAK_PAGE_SIZE,
					       run * CLOAK_PAGE_SIZE);
				wiped += run * CLOAK_PAGE_SIZE;
				i += run;
			}
		}
	}
	return wiped;
}

uint64_t membackend_release(struct membacking *mb)
{
	uint64_t wiped = 0;
	if (mb->base) {
		if (!mb->skip_wipe)
			wiped = membackend_wipe(mb);
		munmap(mb->base, mb->size);
	}
	if (mb->fd >= 0)
		close(mb->fd);
	if (mb->pagemap_fd >= 0)
		close(mb->pagemap_fd);
	mb->base = NULL;
	mb->fd = mb->pagemap_fd = -1;
	return wiped;
}

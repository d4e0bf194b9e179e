/* SPDX-License-Identifier: ISC */
/*
 * Guest RAM backends:
 *  shared  memfd, MAP_SHARED: no protection, for comparison and debugging;
 *  secret  memfd_secret: out of the kernel direct map, refused to GUP, not
 *          dumped, not inherited (MADV_DONTFORK);
 *  gmem    guest_memfd with the flags the host offers (guest_memfd.c);
 *  anon    anonymous memory, for unit tests and fuzzing only.
 * Each states what protects guest memory on this host, and how it knows.
 */
#include "backend.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "cloak/abi.h"
#include "give_up.h"
#include "guest_memfd.h"
#include "secretmem.h"
#include "test_hooks.h"

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

uint64_t gm_backend_abi(enum gm_backend kind)
{
	switch (kind) {
	case GM_BACKEND_SECRET: return CLOAK_BACKEND_SECRET;
	case GM_BACKEND_GMEM: return CLOAK_BACKEND_GMEM;
	case GM_BACKEND_SHARED:
	case GM_BACKEND_ANON: break;
	}
	return CLOAK_BACKEND_SHARED; /* anonymous memory protects nothing either */
}

/* Guest memory is a file: RLIMIT_FSIZE applies to its size. */
static int file_size_refusal(struct membacking *mb, struct fail *f)
{
	return fail_set(f, CLOAK_EXIT_NOHOST, "cannot create %llu MiB of guest memory: the file "
			"size limit (ulimit -f, systemd LimitFSIZE) is lower: raise it or lower "
			"--mem", (unsigned long long)(mb->size >> 20));
}

static int map_memfd(struct membacking *mb, struct fail *f)
{
	mb->fd = memfd_create("cloak-guest", MFD_CLOEXEC);
	if (mb->fd < 0 || ftruncate(mb->fd, (off_t)mb->size) != 0) {
		if (errno == EFBIG)
			return file_size_refusal(mb, f);
		return fail_set(f, CLOAK_EXIT_INTERNAL, "cannot create guest memory (memfd, "
				"%llu MiB): %s", (unsigned long long)(mb->size >> 20),
				strerror(errno));
	}
	void *p = mmap(NULL, mb->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE,
		       mb->fd, 0);
	if (p == MAP_FAILED)
		return fail_set(f, CLOAK_EXIT_INTERNAL, "cannot map guest memory (%llu MiB): %s",
				(unsigned long long)(mb->size >> 20), strerror(errno));
	mb->base = p;
	madvise(p, mb->size, MADV_DONTFORK);
	mb->protections = CLOAK_PROT_CHECKED_ACCESS;
	snprintf(mb->describe, sizeof mb->describe,
		 "plain memfd: NO protection from the host kernel or other processes");
	return 0;
}

static int memlock_refusal(struct membacking *mb, struct fail *f)
{
	struct memlock_info mi;
	memlock_query(&mi);
	/* The limit can be large enough and still be used up: by this
	 * process's other locked memory, or, on kernels that charge secret
	 * pages at first touch, per user, by the user's other processes
	 * (secretmem_populate found out). */
	if (mi.soft >= mb->size && !mi.cap_ipc_lock)
		return fail_set(f, CLOAK_EXIT_NOHOST,
				"RLIMIT_MEMLOCK (%llu KiB) covers the %llu MiB of secret guest memory, "
				"but other locked memory holds part of it (some kernels charge secret "
				"memory per user, so your other processes count): raise it (ulimit -l; "
				"docs/running.md), lower --mem, or use --memory=shared without "
				"protection",
				(unsigned long long)(mi.soft >> 10), (unsigned long long)(mb->size >> 20));
	return fail_set(f, CLOAK_EXIT_NOHOST,
			"RLIMIT_MEMLOCK (%llu KiB) is below the %llu MiB of secret guest memory: "
			"raise it (ulimit -l %llu; docs/running.md), lower --mem, or use "
			"--memory=shared without protection",
			(unsigned long long)(mi.soft >> 10), (unsigned long long)(mb->size >> 20),
			(unsigned long long)(mb->size >> 10));
}

bool membackend_gup_refused(const void *addr)
{
	char probe;
	struct iovec local = { &probe, 1 }, remote = { (void *)addr, 1 };
	errno = 0;
	return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) < 0 && errno == EFAULT;
}

static int map_secret(struct membacking *mb, bool keep_fd, struct fail *f)
{
	if (!secretmem_supported()) /* cached: one memfd_secret for the probe */
		return fail_set(f, CLOAK_EXIT_NOHOST,
				"memfd_secret is not available on this kernel (needs Linux 5.14+ "
				"with secretmem enabled): without protection, use --memory=shared");
	if (!memlock_ensure(mb->size))
		return memlock_refusal(mb, f);
	/* The descriptor is closed once mapped: a process allowed to take
	 * another's descriptors (pidfd_getfd) would otherwise map guest RAM
	 * and read it like the monitor. */
	void *p = secretmem_map(mb->size, keep_fd ? &mb->fd : NULL);
	if (!p) {
		if (errno == EAGAIN || errno == ENOMEM)
			return memlock_refusal(mb, f);
		if (errno == EFBIG)
			return file_size_refusal(mb, f);
		return fail_set(f, CLOAK_EXIT_NOHOST, "memfd_secret failed: %s: without "
				"protection, use --memory=shared", strerror(errno));
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
	bool gup_refused = membackend_gup_refused(p);
	if (gup_refused)
		mb->protections |= CLOAK_PROT_NO_GUP;
	snprintf(mb->describe, sizeof mb->describe,
		 "memfd_secret: out of the kernel direct map (kernel-enforced), %s, not "
		 "dumped, not inherited; still mapped in this monitor",
		 gup_refused ? "GUP refused (checked: process_vm_readv EFAULT)"
			     : "GUP NOT refused (process_vm_readv went through)");
	return 0;
}

static int map_guest_memfd(struct membacking *mb, int vm_fd, struct fail *f)
{
	struct guest_memfd_plan plan;
	if (guest_memfd_map(vm_fd, mb->size, &mb->fd, (void **)&mb->base, &plan, f))
		return -1;
	mb->is_guest_memfd = true;
	mb->guest_memfd_flags = plan.flags;
	char why[200] = "";
	mb->can_give_up = give_up_possible(why, sizeof why);
	mb->protections = CLOAK_PROT_CHECKED_ACCESS |
			  (plan.no_direct_map ? CLOAK_PROT_NO_DIRECT_MAP : 0);
	snprintf(mb->describe, sizeof mb->describe,
		 "guest_memfd (flags 0x%llx): %s; %s%s%s", (unsigned long long)plan.flags,
		 plan.no_direct_map ? "out of the kernel direct map"
				    : "in the kernel direct map (guest_memfd offers no "
				      "NO_DIRECT_MAP here)",
		 mb->can_give_up ? "once the guest protects, this monitor unmaps every private "
				   "page and keeps no descriptor"
				 : "mapped in this monitor and reachable by GUP",
		 mb->can_give_up ? "" : ": ", why);
	return 0;
}

static int map_anon(struct membacking *mb, struct fail *f)
{
	void *p = mmap(NULL, mb->size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return fail_set(f, CLOAK_EXIT_INTERNAL, "cannot map %llu MiB: %s",
				(unsigned long long)(mb->size >> 20), strerror(errno));
	mb->base = p;
	mb->protections = CLOAK_PROT_CHECKED_ACCESS;
	snprintf(mb->describe, sizeof mb->describe, "anonymous memory (tests only)");
	return 0;
}

int membackend_create(struct membacking *mb, enum gm_backend kind, uint64_t size,
		      int kvm_vm_fd, bool keep_fd, struct fail *f)
{
	memset(mb, 0, sizeof *mb);
	mb->kind = kind;
	mb->size = size;
	mb->fd = mb->pagemap_fd = -1;
	int r;
	switch (kind) {
	case GM_BACKEND_SHARED: r = map_memfd(mb, f); break;
	case GM_BACKEND_SECRET: r = map_secret(mb, keep_fd, f); break;
	case GM_BACKEND_GMEM: r = map_guest_memfd(mb, kvm_vm_fd, f); break;
	case GM_BACKEND_ANON: r = map_anon(mb, f); break;
	default: r = fail_set(f, CLOAK_EXIT_INTERNAL, "unknown memory backend %d", (int)kind);
	}
	if (r != 0) {
		if (mb->base)
			munmap(mb->base, mb->size);
		if (mb->fd >= 0)
			close(mb->fd);
		mb->fd = -1;
		mb->base = NULL;
	}
	return r;
}

uint64_t membackend_release(struct membacking *mb)
{
	uint64_t wiped = 0;
	if (mb->base) {
		wiped = membackend_wipe(mb);
		test_hooks_phase("guest memory wiped");
		munmap(mb->base, mb->size);
		test_hooks_phase("guest memory unmapped");
	}
	if (mb->fd >= 0)
		close(mb->fd);
	if (mb->pagemap_fd >= 0)
		close(mb->pagemap_fd);
	test_hooks_phase("guest memory descriptors closed");
	mb->base = NULL;
	mb->fd = mb->pagemap_fd = -1;
	return wiped;
}

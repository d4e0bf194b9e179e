/* SPDX-License-Identifier: ISC */
/* guest_memfd probing and creation; see guest_memfd.h. */
#include "guest_memfd.h"

#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kvm/kvm_compat.h"

static uint64_t check(int fd, long cap)
{
	int r = ioctl(fd, KVM_CHECK_EXTENSION, cap);
	return r > 0 ? (uint64_t)r : 0;
}

void guest_memfd_probe(int vm_fd, struct guest_memfd_caps *out)
{
	memset(out, 0, sizeof *out);
	if (vm_fd < 0)
		return;
	out->guest_memfd = check(vm_fd, KVM_CAP_GUEST_MEMFD) != 0;
	out->user_memory2 = check(vm_fd, KVM_CAP_USER_MEMORY2) != 0;
	out->flags = check(vm_fd, KVM_CAP_GUEST_MEMFD_FLAGS);
}

int guest_memfd_plan(const struct guest_memfd_caps *caps, struct guest_memfd_plan *out,
		     struct fail *f)
{
	memset(out, 0, sizeof *out);
	if (!caps->guest_memfd || !caps->user_memory2)
		return fail_set(f, CLOAK_EXIT_NOHOST, "this host's KVM offers no guest_memfd "
				"for a default VM (KVM_CAP_GUEST_MEMFD; Linux 6.18+ offers it)");
	/* The monitor loads the image through a mapping, so the memory must
	 * be mappable and start shared. A guest_memfd without MMAP is private
	 * only, which a default VM cannot run from. */
	uint64_t want = GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED;
	if ((caps->flags & want) != want)
		return fail_set(f, CLOAK_EXIT_NOHOST, "this host's guest_memfd cannot be mapped "
				"(flags 0x%llx lack MMAP|INIT_SHARED; Linux 6.18+ offers them)",
				(unsigned long long)caps->flags);
	/* Direct-map removal for guest_memfd is proposed upstream, not
	 * merged: asked for only where the host offers it. */
	if (caps->flags & CLOAK_GUEST_MEMFD_FLAG_NO_DIRECT_MAP) {
		want |= CLOAK_GUEST_MEMFD_FLAG_NO_DIRECT_MAP;
		out->no_direct_map = true;
	}
	out->flags = want;
	return 0;
}

int guest_memfd_map(int vm_fd, uint64_t size, int *fd, void **base,
		    struct guest_memfd_plan *plan, struct fail *f)
{
	struct guest_memfd_caps caps;
	guest_memfd_probe(vm_fd, &caps);
	if (guest_memfd_plan(&caps, plan, f))
		return -1;
	struct kvm_create_guest_memfd req = { .size = size, .flags = plan->flags };
	int g = ioctl(vm_fd, KVM_CREATE_GUEST_MEMFD, &req);
	if (g < 0)
		return fail_set(f, CLOAK_EXIT_NOHOST, "KVM_CREATE_GUEST_MEMFD (%llu MiB, flags "
				"0x%llx) failed: %s", (unsigned long long)(size >> 20),
				(unsigned long long)plan->flags, strerror(errno));
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, g, 0);
	if (p == MAP_FAILED) {
		int e = errno;
		close(g);
		return fail_set(f, CLOAK_EXIT_NOHOST, "cannot map guest_memfd: %s", strerror(e));
	}
	/* Kept out of children and out of core dumps, as secret memory is by
	 * its kernel: where KVM needs this mapping (no next-RIP save), it must
	 * not carry guest memory anywhere else. */
	madvise(p, size, MADV_DONTFORK);
	madvise(p, size, MADV_DONTDUMP);
	*fd = g;
	*base = p;
	return 0;
}

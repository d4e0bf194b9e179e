/* guest_memfd probing and creation; see gmem.h. */
#include "gmem.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cloak/abi.h"
#include "kvm_compat.h"

static uint64_t check(int fd, long cap)
{
	int r = ioctl(fd, KVM_CHECK_EXTENSION, cap);
	return r > 0 ? (uint64_t)r : 0;
}

static int real_ioctl(int fd, unsigned long request, void *arg)
{
	return ioctl(fd, request, arg);
}
int (*gmem_ioctl)(int fd, unsigned long request, void *arg) = real_ioctl;

int gmem_set_private(int vm_fd, uint64_t gpa, uint64_t size, bool private_)
{
	struct kvm_memory_attributes a = {
		.address = gpa, .size = size,
		.attributes = private_ ? KVM_MEMORY_ATTRIBUTE_PRIVATE : 0, .flags = 0,
	};
	return gmem_ioctl(vm_fd, KVM_SET_MEMORY_ATTRIBUTES, &a);
}

void gmem_probe(int vm_fd, struct gmem_caps *out)
{
	memset(out, 0, sizeof *out);
	if (vm_fd < 0)
		return;
	out->guest_memfd = check(vm_fd, KVM_CAP_GUEST_MEMFD) != 0;
	out->user_memory2 = check(vm_fd, KVM_CAP_USER_MEMORY2) != 0;
	out->flags = check(vm_fd, KVM_CAP_GUEST_MEMFD_FLAGS);
	out->attributes = check(vm_fd, KVM_CAP_MEMORY_ATTRIBUTES);
	out->vm_types = check(vm_fd, KVM_CAP_VM_TYPES);
}

int gmem_plan(const struct gmem_caps *caps, struct gmem_plan *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	if (!caps->guest_memfd || !caps->user_memory2) {
		snprintf(err, errlen, "this host's KVM has no guest_memfd "
			 "(KVM_CAP_GUEST_MEMFD): use --memory=secret");
		return -1;
	}
	/* KVM on hosts like these reads guest memory through the monitor's
	 * mapping, so the memory must be mappable and start shared. Private
	 * guest_memfd (no MMAP) needs in-place conversion, which cloak does
	 * not drive yet: it is reported, not used. */
	uint64_t want = GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED;
	if ((caps->flags & want) != want) {
		snprintf(err, errlen, "this host's guest_memfd cannot be mapped "
			 "(flags 0x%llx lack MMAP|INIT_SHARED) and cloak does not drive "
			 "private conversion yet: use --memory=secret",
			 (unsigned long long)caps->flags);
		return -1;
	}
	if (caps->flags & CLOAK_GUEST_MEMFD_FLAG_NO_DIRECT_MAP) {
		want |= CLOAK_GUEST_MEMFD_FLAG_NO_DIRECT_MAP;
		out->no_direct_map = true;
	}
	out->private_possible = (caps->attributes & KVM_MEMORY_ATTRIBUTE_PRIVATE) != 0;
	out->flags = want;
	return 0;
}

int gmem_map(int vm_fd, uint64_t size, int *fd, void **base, struct gmem_plan *plan,
	     char *err, size_t errlen, int *exit_status)
{
	struct gmem_caps caps;
	gmem_probe(vm_fd, &caps);
	*exit_status = CLOAK_EXIT_NOHOST;
	if (gmem_plan(&caps, plan, err, errlen))
		return -1;
	uint64_t want = plan->flags;
	struct kvm_create_guest_memfd req = { .size = size, .flags = want };
	int g = ioctl(vm_fd, KVM_CREATE_GUEST_MEMFD, &req);
	if (g < 0) {
		snprintf(err, errlen, "KVM_CREATE_GUEST_MEMFD (%llu MiB, flags 0x%llx) "
			 "failed: %s", (unsigned long long)(size >> 20),
			 (unsigned long long)want, strerror(errno));
		return -1;
	}
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, g, 0);
	if (p == MAP_FAILED) {
		snprintf(err, errlen, "cannot map guest_memfd: %s", strerror(errno));
		close(g);
		return -1;
	}
	madvise(p, size, MADV_DONTFORK);
	*fd = g;
	*base = p;
	return 0;
}

/* Host probing; see hostcheck.h. */
#include "hostcheck.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "gmem.h"
#include "kvm_compat.h"
#include "secretmem.h"

void hostcheck_report_brief(enum gm_backend backend)
{
	int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	int vmfd = kvm >= 0 ? ioctl(kvm, KVM_CREATE_VM, 0) : -1;
	struct gmem_caps caps;
	gmem_probe(vmfd, &caps);
	struct memlock_info mi;
	memlock_query(&mi);
	fprintf(stderr, "cloak: host: KVM API %d, guest_memfd %s (flags 0x%llx), memory "
		"attributes 0x%llx, memfd_secret %s, memlock %llu KiB%s\n",
		kvm >= 0 ? ioctl(kvm, KVM_GET_API_VERSION, 0) : -1,
		caps.guest_memfd ? "yes" : "no", (unsigned long long)caps.flags,
		(unsigned long long)caps.attributes, secretmem_supported() ? "yes" : "no",
		(unsigned long long)(mi.soft == UINT64_MAX ? 0 : mi.soft >> 10),
		mi.cap_ipc_lock ? " (CAP_IPC_LOCK: not enforced)" : "");
	fprintf(stderr, "cloak: memory backend: %s\n", gm_backend_name(backend));
	if (vmfd >= 0)
		close(vmfd);
	if (kvm >= 0)
		close(kvm);
}

int hostcheck_run(const struct options *o)
{
	hostcheck_report_brief(o->backend);
	return 0;
}

/* SPDX-License-Identifier: ISC */
/* Opening KVM; see kvm.h. */
#include "kvm.h"

#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "kvm_compat.h"
#include "mem/guest_memfd.h"

bool kvm_steps_over_intercepts(bool vmx, const char *nrips, char *why, size_t len)
{
	if (vmx)
		return true; /* the exit carries the instruction length */
	if (nrips && (nrips[0] == 'Y' || nrips[0] == '1'))
		return true;
	snprintf(why, len, "%s", nrips ? "kvm_amd runs without next-RIP save (nrips=N), so KVM "
		 "decodes each instruction it intercepts from guest memory"
		 : "cannot tell whether KVM decodes intercepted instructions from guest memory "
		   "(no /sys/module/kvm_amd/parameters/nrips)");
	return false;
}

bool kvm_host_hw_virt(void)
{
	unsigned a, b, c, d;
	bool vmx = __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 5));
	bool svm = __get_cpuid(0x80000001u, &a, &b, &c, &d) && (c & (1u << 2));
	return vmx || svm;
}

bool kvm_steps_without_guest_reads(char *why, size_t len)
{
	unsigned a, b, c, d;
	bool vmx = __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 5));
	char v[8] = "";
	int fd = vmx ? -1 : open("/sys/module/kvm_amd/parameters/nrips", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, v, sizeof v - 1) : -1;
	if (fd >= 0)
		close(fd);
	return kvm_steps_over_intercepts(vmx, n > 0 ? v : NULL, why, len);
}

/* Intel needs a TSS area for real-mode emulation even though cloak never
 * uses real mode; placed just below 4 GiB, outside guest RAM. */
#define KVM_TSS_ADDR 0xfffbd000ul

int kvm_open(struct kvm_host *k, struct fail *f)
{
	k->kvm_fd = k->vm_fd = -1;
	k->api = -1;
	k->cpuid = (struct cpuid_query){ .kvm_fd = -1 };
	k->kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (k->kvm_fd < 0) {
		if (errno == ENOENT || errno == ENXIO || errno == ENODEV)
			return fail_set(f, CLOAK_EXIT_NOHOST, "/dev/kvm does not exist: load the "
					"KVM module (modprobe kvm_intel or kvm_amd) or run on a "
					"host with KVM");
		if (errno == EACCES || errno == EPERM)
			return fail_set(f, CLOAK_EXIT_NOHOST, "no permission to open /dev/kvm: add "
					"yourself to its group (sudo usermod -aG kvm $USER, then "
					"log in again) or run as root");
		return fail_set(f, CLOAK_EXIT_NOHOST, "cannot open /dev/kvm: %s", strerror(errno));
	}
	k->cpuid = (struct cpuid_query){ .kvm_fd = k->kvm_fd };
	k->api = ioctl(k->kvm_fd, KVM_GET_API_VERSION, 0);
	if (k->api < 0) {
		int e = errno;
		kvm_close(k);
		return fail_set(f, CLOAK_EXIT_NOHOST, "/dev/kvm is not a KVM device "
				"(KVM_GET_API_VERSION: %s): load the KVM module (modprobe "
				"kvm_intel or kvm_amd) or run on a host with KVM", strerror(e));
	}
	if (k->api != KVM_API_VERSION) {
		kvm_close(k);
		return fail_set(f, CLOAK_EXIT_NOHOST, "/dev/kvm speaks KVM API %d, cloak needs "
				"%d: use a newer kernel", k->api, KVM_API_VERSION);
	}
	k->vm_fd = ioctl(k->kvm_fd, KVM_CREATE_VM, 0);
	if (k->vm_fd < 0) {
		int e = errno;
		kvm_close(k);
		return fail_set(f, CLOAK_EXIT_NOHOST, "KVM_CREATE_VM failed: %s%s", strerror(e),
				e == EBUSY ? " (another hypervisor holds the CPU's "
					     "virtualization)" : "");
	}
	ioctl(k->vm_fd, KVM_SET_TSS_ADDR, KVM_TSS_ADDR);
	return 0;
}

void kvm_close(struct kvm_host *k)
{
	cpuid_query_end(&k->cpuid);
	if (k->vm_fd >= 0)
		close(k->vm_fd);
	if (k->kvm_fd >= 0)
		close(k->kvm_fd);
	k->vm_fd = k->kvm_fd = -1;
}

void kvm_describe(const struct kvm_host *k, char *buf, size_t len)
{
	struct guest_memfd_caps caps;
	guest_memfd_probe(k->vm_fd, &caps);
	snprintf(buf, len, "KVM API %d, guest_memfd %s (flags 0x%llx)", k->api,
		 caps.guest_memfd ? "yes" : "no", (unsigned long long)caps.flags);
}

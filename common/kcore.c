/* SPDX-License-Identifier: ISC */
/* Physical memory through /proc/kcore; see kcore.h. */
#include "kcore.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define PG 4096u
#define PFN_MASK ((1ull << 55) - 1)

uint64_t kcore_physical_address(uintptr_t va)
{
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	uint64_t entry = 0;
	if (fd < 0)
		return 0;
	ssize_t n = pread(fd, &entry, sizeof entry, (off_t)(va / PG * 8));
	close(fd);
	if (n != (ssize_t)sizeof entry || !(entry >> 63) || !(entry & PFN_MASK))
		return 0;
	return (entry & PFN_MASK) * PG + va % PG;
}

/* The kernel image's mapping sits in the top 2 GiB of the address space
 * (__START_KERNEL_map on x86-64); the direct map lies below it. */
#define KERNEL_IMAGE_VA 0xffffffff80000000ull

static int read_in(int fd, uint64_t phys, enum kcore_mapping which, void *buf, size_t n)
{
	Elf64_Ehdr eh;
	if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh)
		return -1;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + i * sizeof ph)) != (ssize_t)sizeof ph)
			break;
		/* RAM segments carry their physical address; others -1. */
		if (ph.p_type != PT_LOAD || ph.p_paddr == (Elf64_Addr)-1 || phys < ph.p_paddr ||
		    phys + n > ph.p_paddr + ph.p_memsz ||
		    (ph.p_vaddr >= KERNEL_IMAGE_VA) != (which == KCORE_IMAGE))
			continue;
		return pread(fd, buf, n, (off_t)(ph.p_offset + phys - ph.p_paddr)) == (ssize_t)n ? 0 : 1;
	}
	return -1;
}

int kcore_read_physical(uint64_t phys, enum kcore_mapping which, void *buf, size_t n)
{
	int fd = open("/proc/kcore", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int r = read_in(fd, phys, which, buf, n);
	close(fd);
	return r;
}

enum kcore_view kcore_view(uintptr_t va, const void *expect, size_t n, char *why, size_t len)
{
	unsigned char seen[256];
	if (n > sizeof seen)
		n = sizeof seen;
	uint64_t phys = kcore_physical_address(va);
	if (!phys) {
		snprintf(why, len, "no physical address from /proc/self/pagemap (needs root)");
		return KCORE_UNAVAILABLE;
	}
	int r = kcore_read_physical(phys, KCORE_DIRECT_MAP, seen, n);
	if (r < 0) {
		snprintf(why, len, "no /proc/kcore segment for physical 0x%llx (%s)",
			 (unsigned long long)phys, errno ? strerror(errno) : "none covers it");
		return KCORE_UNAVAILABLE;
	}
	if (r == 0 && !memcmp(seen, expect, n)) {
		snprintf(why, len, "/proc/kcore shows the page's bytes at physical 0x%llx",
			 (unsigned long long)phys);
		return KCORE_VISIBLE;
	}
	snprintf(why, len, "/proc/kcore shows %s at physical 0x%llx, where the page holds "
		 "a marker", r ? "a hole" : "other bytes", (unsigned long long)phys);
	return KCORE_HIDDEN;
}

enum kcore_view kcore_image_view(uintptr_t base, uint64_t npages, const void *expect, size_t n,
				 char *why, size_t len)
{
	unsigned char seen[256];
	if (n > sizeof seen)
		n = sizeof seen;
	int fd = open("/proc/kcore", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, len, "no /proc/kcore (%s)", strerror(errno));
		return KCORE_UNAVAILABLE;
	}
	uint64_t looked = 0, in_range = 0;
	enum kcore_view v = KCORE_HIDDEN;
	for (uint64_t i = 0; i < npages && v == KCORE_HIDDEN; i++) {
		uint64_t phys = kcore_physical_address(base + i * PG);
		if (!phys)
			continue;
		looked++;
		int r = read_in(fd, phys, KCORE_IMAGE, seen, n);
		if (r >= 0)
			in_range++;
		if (r == 0 && !memcmp(seen, expect, n)) {
			snprintf(why, len, "the kernel image's mapping shows the bytes of a page at "
				 "physical 0x%llx (a page freed from the kernel image at boot, still "
				 "mapped there)", (unsigned long long)phys);
			v = KCORE_VISIBLE;
		}
	}
	close(fd);
	if (v == KCORE_VISIBLE)
		return v;
	if (!looked) {
		snprintf(why, len, "no physical address from /proc/self/pagemap (needs root)");
		return KCORE_UNAVAILABLE;
	}
	snprintf(why, len, "%llu of %llu pages lie in the kernel image's physical range; its "
		 "mapping shows none of them", (unsigned long long)in_range,
		 (unsigned long long)looked);
	return KCORE_HIDDEN;
}

/* SPDX-License-Identifier: ISC */
/*
 * Physical memory as the kernel maps it, through /proc/kcore (root,
 * CONFIG_PROC_KCORE): whether a page of ours is in the kernel's direct map,
 * or in its other mapping of RAM, the kernel image's (on x86-64 the image
 * is mapped a second time at __START_KERNEL_map, and pages the kernel
 * frees from it at boot become ordinary free pages). Answered by looking.
 * Shared by `cloak check` and the tests.
 */
#ifndef CLOAK_COMMON_KCORE_H
#define CLOAK_COMMON_KCORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The physical address of the byte at virtual address `va` of this
 * process (/proc/self/pagemap; needs CAP_SYS_ADMIN), or 0 when the page is
 * not present or its frame is hidden. */
uint64_t kcore_physical_address(uintptr_t va);

/* The kernel's two mappings of RAM that /proc/kcore shows. */
enum kcore_mapping {
	KCORE_DIRECT_MAP, /* every page of RAM */
	KCORE_IMAGE,      /* the kernel image's physical range only */
};

/* Reads n bytes of physical memory at `phys` through the kcore segment of
 * `which` mapping that covers it. 0; -1 when there is no /proc/kcore or no
 * such segment covers it; 1 when the segment is there but the bytes cannot
 * be read (the page is not mapped there: kcore reads it as a hole). */
int kcore_read_physical(uint64_t phys, enum kcore_mapping which, void *buf, size_t n);

/* Where a page stands, by comparing what a kernel mapping shows with what
 * the page holds: */
enum kcore_view {
	KCORE_UNAVAILABLE, /* no /proc/kcore, or no physical address (not root) */
	KCORE_VISIBLE,     /* the kernel mapping shows the page's bytes */
	KCORE_HIDDEN,      /* it shows zeros or nothing there */
};
/* The direct map's view of the page at va, which holds `expect` (n bytes
 * at va). */
enum kcore_view kcore_view(uintptr_t va, const void *expect, size_t n, char *why, size_t len);
/* The kernel image mapping's view of each of the npages pages at base,
 * each of which starts with `expect` (n bytes): VISIBLE if it shows any
 * of them, HIDDEN if none (most pages lie outside its range). */
enum kcore_view kcore_image_view(uintptr_t base, uint64_t npages, const void *expect, size_t n,
				 char *why, size_t len);

#endif

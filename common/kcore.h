/* SPDX-License-Identifier: ISC */
/*
 * Physical memory as the kernel's direct map holds it, through /proc/kcore
 * (root, CONFIG_PROC_KCORE): whether a page of ours is in the direct map,
 * answered by looking. Shared by `cloak check` and the tests.
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

/* Reads n bytes of physical memory at `phys` through the kcore segment of
 * the direct map that covers it. 0; -1 when there is no /proc/kcore or no
 * segment covers it; 1 when the segment is there but the bytes cannot be
 * read (the page is not in the direct map: kcore reads it as a hole). */
int kcore_read_physical(uint64_t phys, void *buf, size_t n);

/* Where a page stands, by comparing what the direct map shows with what
 * the page holds (`expect`, n bytes at va): */
enum kcore_view {
	KCORE_UNAVAILABLE, /* no /proc/kcore, or no physical address (not root) */
	KCORE_VISIBLE,     /* the direct map shows the page's bytes */
	KCORE_HIDDEN,      /* the direct map shows zeros or nothing there */
};
enum kcore_view kcore_view(uintptr_t va, const void *expect, size_t n, char *why, size_t len);

#endif

/* SPDX-License-Identifier: ISC */
/*
 * PAGEMAP_SCAN (Linux 6.7), which Debian 12's 6.1 headers lack: an ioctl on
 * /proc/self/pagemap that returns the ranges of a mapping whose pages match
 * a category (here: present or swapped) instead of one entry per page.
 * Layout and request number are the kernel's uapi ones.
 */
#ifndef CLOAK_PAGEMAP_SCAN_H
#define CLOAK_PAGEMAP_SCAN_H

#include <stdint.h>
#include <sys/ioctl.h>

struct cloak_page_region {
	uint64_t start, end, categories;
};

struct cloak_pm_scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};

#define CLOAK_PAGEMAP_SCAN _IOWR('f', 16, struct cloak_pm_scan_arg)
#define CLOAK_PAGE_IS_PRESENT (1u << 3)
#define CLOAK_PAGE_IS_SWAPPED (1u << 4)

#endif

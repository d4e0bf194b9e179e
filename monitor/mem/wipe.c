/* SPDX-License-Identifier: ISC */
/*
 * The wipe: before guest memory goes back to the kernel, every page that
 * may hold data is zeroed, and only those, so a sparse 16 GiB guest costs
 * what it touched. See docs/design.md ("Protection") for why each backend
 * finds its pages the way it does.
 */
#include "backend.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cachestat.h"

#include "cloak/abi.h"
#include "pagemap_scan.h"

/* Which pages of [off, off+n pages) may hold data: bit 0 of vec[i]. From
 * /proc/self/pagemap where the backend allows (7x cheaper than mincore
 * on emulating hosts: it skips unpopulated page tables wholesale), else from mincore.
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

/* Where the kernel has PAGEMAP_SCAN, it lists the ranges of present (or
 * swapped) pages itself: one call for a sparse guest, where reading
 * pagemap costs one entry per page (measured for 64 MiB with 17 pages
 * present: ~2 us against ~48 us). -1 if the kernel cannot; the caller
 * then walks pagemap (pages wiped here meanwhile are wiped again). */
static int64_t wipe_scanned(struct membacking *mb)
{
	struct cloak_page_region vec[32];
	uint64_t base = (uintptr_t)mb->base, end = base + mb->size, at = base, wiped = 0;
	while (at < end) {
		struct cloak_pm_scan_arg a = {
			.size = sizeof a, .start = at, .end = end,
			.vec = (uintptr_t)vec, .vec_len = sizeof vec / sizeof vec[0],
			.category_anyof_mask = CLOAK_PAGE_IS_PRESENT | CLOAK_PAGE_IS_SWAPPED,
			.return_mask = CLOAK_PAGE_IS_PRESENT | CLOAK_PAGE_IS_SWAPPED,
		};
		long n = ioctl(mb->pagemap_fd, CLOAK_PAGEMAP_SCAN, &a);
		if (n < 0 || (uint64_t)n > a.vec_len || a.walk_end <= at || a.walk_end > end)
			return -1;
		for (long i = 0; i < n; i++) {
			uint64_t s = vec[i].start, e = vec[i].end;
			if (s < at || e > a.walk_end || s >= e)
				return -1; /* not what was asked for: trust nothing */
			explicit_bzero(mb->base + (s - base), (size_t)(e - s));
			wiped += e - s;
		}
		at = a.walk_end;
	}
	return (int64_t)wiped;
}

/* Wipes the pages of [off, off+len) that the page tables or mincore say
 * may hold data, 16 MiB at a time; all of them where neither can tell. */
static uint64_t wipe_resident(struct membacking *mb, uint64_t from, uint64_t len_all)
{
	const uint64_t chunk_pages = 4096; /* 16 MiB at a time */
	unsigned char vec[4096];
	uint64_t wiped = 0;
	for (uint64_t off = from; off < from + len_all; off += chunk_pages * CLOAK_PAGE_SIZE) {
		uint64_t len = from + len_all - off;
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

/* A guest_memfd's pages that the guest touched through KVM are in its page
 * cache, not in this process's page tables, so of the per-page probes only
 * mincore sees them, at one page-cache lookup for every page of the range
 * (2.5 ms of an empty guest's 64 MiB in the SVM tier, a tenth of its boot
 * beyond /bin/true). cachestat counts the cached pages of a range in one
 * call that visits only the pages present: halving the ranges that are
 * partly cached finds the few regions a guest touched, a range cached
 * whole is wiped whole, and mincore reads only 2 MiB leaves. -1 if the
 * kernel cannot tell (the caller then wipes by mincore alone). */
#define WIPE_CACHESTAT_LEAF (2ull << 20)

static int64_t wipe_cached(struct membacking *mb, uint64_t off, uint64_t len)
{
	struct cloak_cachestat_range r = { off, len };
	struct cloak_cachestat cs;
	if (syscall(CLOAK_NR_cachestat, mb->fd, &r, &cs, 0) != 0)
		return -1;
	if (cs.nr_cache + cs.nr_evicted == 0)
		return 0;
	if (cs.nr_cache >= len / CLOAK_PAGE_SIZE) {
		explicit_bzero(mb->base + off, (size_t)len);
		return (int64_t)len;
	}
	if (len <= WIPE_CACHESTAT_LEAF)
		return (int64_t)wipe_resident(mb, off, len);
	uint64_t half = len / 2 / WIPE_CACHESTAT_LEAF * WIPE_CACHESTAT_LEAF;
	if (half == 0)
		half = WIPE_CACHESTAT_LEAF;
	int64_t a = wipe_cached(mb, off, half);
	if (a < 0)
		return -1;
	int64_t b = wipe_cached(mb, off + half, len - half);
	return b < 0 ? -1 : a + b;
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
	if (mb->is_guest_memfd && mb->fd >= 0) {
		int64_t w = wipe_cached(mb, 0, mb->size);
		if (w >= 0)
			return (uint64_t)w;
	}
	if (mb->pagemap_fd >= 0) {
		int64_t w = wipe_scanned(mb);
		if (w >= 0)
			return (uint64_t)w;
	}
	return wipe_resident(mb, 0, mb->size);
}

/*
 * Checked access to guest memory (the seed's copy_from_guest and
 * copy_to_guest). This file and membackend.c are the only ones that hold
 * the host mapping; see guestmem.h.
 */
#include "guestmem.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cloak/abi.h"
#include "gmem.h"
#include "membackend.h"
#include "sharemap.h"

struct guestmem {
	struct membacking mb;
	struct sharemap shared;
	bool protect;
	bool log_refusals;
	uint64_t refused;
};

/* A hostile guest can cause refusals at will: log only the first few. */
#define GM_LOG_MAX 16

static enum gm_status refuse(struct guestmem *gm, enum gm_status s, uint64_t start,
			     uint64_t len)
{
	gm->refused++;
	if (gm->log_refusals && gm->refused <= GM_LOG_MAX)
		fprintf(stderr, "cloak: refused guest access [0x%llx, +%llu): %s%s\n",
			(unsigned long long)start, (unsigned long long)len,
			s == GM_EACCES ? "page not shared" : "outside guest memory",
			gm->refused == GM_LOG_MAX ? " (further refusals counted, not logged)" : "");
	return s;
}

void gm_set_log(struct guestmem *gm, bool on)
{
	gm->log_refusals = on;
}

struct guestmem *gm_create(enum gm_backend backend, uint64_t size, int kvm_vm_fd,
			   char *err, size_t errlen, int *exit_status)
{
	if (size == 0 || size % CLOAK_PAGE_SIZE) {
		snprintf(err, errlen, "guest memory size %llu is not a positive multiple "
			 "of 4 KiB", (unsigned long long)size);
		*exit_status = CLOAK_EXIT_USAGE;
		return NULL;
	}
	struct guestmem *gm = calloc(1, sizeof *gm);
	if (!gm || sharemap_init(&gm->shared, size / CLOAK_PAGE_SIZE) != 0) {
		free(gm);
		snprintf(err, errlen, "out of memory for guest memory bookkeeping");
		*exit_status = CLOAK_EXIT_INTERNAL;
		return NULL;
	}
	if (membackend_create(&gm->mb, backend, size, kvm_vm_fd, err, errlen, exit_status)) {
		sharemap_free(&gm->shared);
		free(gm);
		return NULL;
	}
	return gm;
}

uint64_t gm_destroy(struct guestmem *gm)
{
	if (!gm)
		return 0;
	/* Private guest_memfd pages cannot be touched through the mapping:
	 * give them back to shared so that the wipe can reach them. */
	if (gm->mb.convertible && gm->protect &&
	    gmem_set_private(gm->mb.vm_fd, 0, gm->mb.size, false) != 0) {
		fprintf(stderr, "cloak: KVM refused to convert guest memory back to shared: "
			"it is released without the wipe\n");
		gm->mb.skip_wipe = true; /* touching private pages would SIGBUS */
	}
	uint64_t wiped = membackend_release(&gm->mb);
	sharemap_free(&gm->shared);
	free(gm);
	return wiped;
}

uint64_t gm_size(const struct guestmem *gm) { return gm->mb.size; }
uint64_t gm_host_protections(const struct guestmem *gm) { return gm->mb.protections; }
const char *gm_describe(const struct guestmem *gm) { return gm->mb.describe; }
enum gm_backend gm_backend(const struct guestmem *gm) { return gm->mb.kind; }
bool gm_protected(const struct guestmem *gm) { return gm->protect; }

/* Converts [first, first+count) pages in KVM, if this memory converts. */
static int convert(struct guestmem *gm, uint64_t first, uint64_t count, bool private_)
{
	if (!gm->mb.convertible || !gm->protect)
		return 0;
	return gmem_set_private(gm->mb.vm_fd, first * CLOAK_PAGE_SIZE,
				count * CLOAK_PAGE_SIZE, private_) ? -CLOAK_EIO : 0;
}

int gm_protect_enable(struct guestmem *gm)
{
	if (gm->protect)
		return 0;
	gm->protect = true;
	if (!gm->mb.convertible)
		return 0;
	/* Everything private, then the shared runs back to shared. If KVM
	 * refuses, undo: protection stays off rather than half on. */
	uint64_t n = gm->shared.npages;
	int r = convert(gm, 0, n, true);
	for (uint64_t p = sharemap_next_set(&gm->shared, 0); r == 0 && p < n;) {
		uint64_t end = p;
		while (end < n && sharemap_all_set(&gm->shared, end, 1))
			end++;
		r = convert(gm, p, end - p, false);
		p = sharemap_next_set(&gm->shared, end);
	}
	if (r) {
		convert(gm, 0, n, false);
		gm->protect = false;
	}
	return r;
}
uint64_t gm_refused(const struct guestmem *gm) { return gm->refused; }

void gm_slot(const struct guestmem *gm, struct gm_slot *out)
{
	out->userspace_addr = (uint64_t)(uintptr_t)gm->mb.base;
	out->size = gm->mb.size;
	out->guest_memfd = gm->mb.is_gmem ? gm->mb.fd : -1;
	out->guest_memfd_offset = 0;
}

/* The one place a range is judged. Bounds first (with overflow), then, with
 * protection on, every page the range touches must be shared. */
static enum gm_status judge(struct guestmem *gm, uint64_t start, uint64_t len)
{
	uint64_t end;
	if (len == 0)
		return start <= gm->mb.size ? GM_OK : refuse(gm, GM_EFAULT, start, len);
	if (__builtin_add_overflow(start, len, &end) || end > gm->mb.size)
		return refuse(gm, GM_EFAULT, start, len);
	if (gm->protect) {
		uint64_t first = start / CLOAK_PAGE_SIZE;
		uint64_t last = (end - 1) / CLOAK_PAGE_SIZE;
		if (!sharemap_all_set(&gm->shared, first, last - first + 1))
			return refuse(gm, GM_EACCES, start, len);
	}
	return GM_OK;
}

enum gm_status gm_check(struct guestmem *gm, gpa_t start, uint64_t len)
{
	return judge(gm, start.v, len);
}

enum gm_status gm_copy_from(struct guestmem *gm, void *dst, gpa_t src, uint64_t len)
{
	enum gm_status s = judge(gm, src.v, len);
	if (s == GM_OK && len)
		memcpy(dst, gm->mb.base + src.v, len);
	return s;
}

enum gm_status gm_copy_to(struct guestmem *gm, gpa_t dst, const void *src, uint64_t len)
{
	enum gm_status s = judge(gm, dst.v, len);
	if (s == GM_OK && len)
		memcpy(gm->mb.base + dst.v, src, len);
	return s;
}

/* Secret memory cannot be swapped, so a page that is not resident has
 * never been faulted in and reads as zero: zeroing it would only fault it
 * in (and take it out of the direct map) for nothing. This keeps the
 * loader's BSS zeroing from touching pages the guest may never use. */
static void zero_resident(struct guestmem *gm, uint64_t start, uint64_t len)
{
	unsigned char *p = gm->mb.base + start;
	uint64_t head = (CLOAK_PAGE_SIZE - start % CLOAK_PAGE_SIZE) % CLOAK_PAGE_SIZE;
	if (gm->mb.kind != GM_BACKEND_SECRET || len < head + CLOAK_PAGE_SIZE) {
		memset(p, 0, len);
		return;
	}
	memset(p, 0, head);
	uint64_t pages = (len - head) / CLOAK_PAGE_SIZE;
	unsigned char vec[256];
	for (uint64_t done = 0; done < pages;) {
		uint64_t n = pages - done < sizeof vec ? pages - done : sizeof vec;
		unsigned char *q = p + head + done * CLOAK_PAGE_SIZE;
		if (membackend_resident(&gm->mb, start + head + done * CLOAK_PAGE_SIZE, n, vec))
			memset(vec, 1, n); /* cannot tell: zero them all */
		for (uint64_t i = 0; i < n; i++)
			if (vec[i] & 1)
				memset(q + i * CLOAK_PAGE_SIZE, 0, CLOAK_PAGE_SIZE);
		done += n;
	}
	uint64_t tail = len - head - pages * CLOAK_PAGE_SIZE;
	memset(p + len - tail, 0, tail);
}

enum gm_status gm_zero(struct guestmem *gm, gpa_t dst, uint64_t len)
{
	enum gm_status s = judge(gm, dst.v, len);
	if (s == GM_OK && len)
		zero_resident(gm, dst.v, len);
	return s;
}

/* For the fd helpers: judge the range, setting errno on refusal. */
static bool fd_range_ok(struct guestmem *gm, uint64_t start, uint64_t len)
{
	enum gm_status s = judge(gm, start, len);
	if (s != GM_OK)
		errno = s == GM_EACCES ? EACCES : EFAULT;
	return s == GM_OK;
}

int64_t gm_pread(struct guestmem *gm, int fd, gpa_t dst, uint64_t len, int64_t off)
{
	return fd_range_ok(gm, dst.v, len) ? pread(fd, gm->mb.base + dst.v, len, off) : -1;
}

int64_t gm_pwrite(struct guestmem *gm, int fd, gpa_t src, uint64_t len, int64_t off)
{
	return fd_range_ok(gm, src.v, len) ? pwrite(fd, gm->mb.base + src.v, len, off) : -1;
}

int64_t gm_read_fd(struct guestmem *gm, int fd, gpa_t dst, uint64_t len)
{
	return fd_range_ok(gm, dst.v, len) ? read(fd, gm->mb.base + dst.v, len) : -1;
}

int64_t gm_write_fd(struct guestmem *gm, int fd, gpa_t src, uint64_t len)
{
	return fd_range_ok(gm, src.v, len) ? write(fd, gm->mb.base + src.v, len) : -1;
}

/* SHARE/UNSHARE validation: aligned, non-empty, inside memory, no wrap. */
static int share_range(struct guestmem *gm, gpa_t g, uint64_t npages, uint64_t *first)
{
	uint64_t bytes, end;
	if (g.v % CLOAK_PAGE_SIZE || npages == 0)
		return -CLOAK_EINVAL;
	if (__builtin_mul_overflow(npages, CLOAK_PAGE_SIZE, &bytes) ||
	    __builtin_add_overflow(g.v, bytes, &end) || end > gm->mb.size)
		return -CLOAK_EFAULT;
	*first = g.v / CLOAK_PAGE_SIZE;
	return 0;
}

/* The monitor is single-threaded: nothing touches guest memory while KVM
 * converts, so both calls convert first and update the bitmap only once
 * KVM agreed. A refused conversion changes nothing. */
int gm_share(struct guestmem *gm, gpa_t g, uint64_t npages)
{
	uint64_t first;
	int r = share_range(gm, g, npages, &first);
	if (r == 0)
		r = convert(gm, first, npages, false);
	if (r == 0)
		sharemap_set(&gm->shared, first, npages);
	return r;
}

int gm_unshare(struct guestmem *gm, gpa_t g, uint64_t npages)
{
	uint64_t first;
	int r = share_range(gm, g, npages, &first);
	if (r == 0)
		r = convert(gm, first, npages, true);
	if (r == 0)
		sharemap_clear(&gm->shared, first, npages);
	return r;
}

void gm_debug_make_convertible(struct guestmem *gm, int vm_fd)
{
	gm->mb.convertible = true;
	gm->mb.vm_fd = vm_fd;
}

bool gm_is_shared(const struct guestmem *gm, gpa_t g, uint64_t len)
{
	uint64_t end;
	if (len == 0 || __builtin_add_overflow(g.v, len, &end) || end > gm->mb.size)
		return false;
	uint64_t first = g.v / CLOAK_PAGE_SIZE, last = (end - 1) / CLOAK_PAGE_SIZE;
	return sharemap_all_set(&gm->shared, first, last - first + 1);
}

uint64_t gm_shared_pages(const struct guestmem *gm)
{
	return gm->shared.nshared;
}

void gm_for_each_shared_page(struct guestmem *gm,
			     void (*fn)(void *ctx, uint64_t gpa, const void *page), void *ctx)
{
	unsigned char copy[CLOAK_PAGE_SIZE];
	for (uint64_t p = sharemap_next_set(&gm->shared, 0); p < gm->shared.npages;
	     p = sharemap_next_set(&gm->shared, p + 1)) {
		memcpy(copy, gm->mb.base + p * CLOAK_PAGE_SIZE, sizeof copy);
		fn(ctx, p * CLOAK_PAGE_SIZE, copy);
	}
}

void gm_debug_keep_fd(bool on)
{
	membackend_keep_fd = on;
}

int gm_debug_dup_fd(const struct guestmem *gm)
{
	return gm->mb.fd >= 0 ? dup(gm->mb.fd) : -1;
}

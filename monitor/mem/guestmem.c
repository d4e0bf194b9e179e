/* SPDX-License-Identifier: ISC */
/*
 * Checked access to guest memory. This folder is the only part of the
 * monitor that holds the host mapping of guest memory; see guestmem.h.
 */
#include "guestmem.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cloak/abi.h"
#include "guestmem_impl.h"
#include "inspect.h"



/* A hostile guest can cause refusals at will: log only the first few. */
#define GM_LOG_MAX 16

int64_t gm_status_abi(enum gm_status s)
{
	switch (s) {
	case GM_OK: return 0;
	case GM_EFAULT: return -CLOAK_EFAULT;
	case GM_EACCES: return -CLOAK_EACCES;
	case GM_EINVAL: return -CLOAK_EINVAL;
	case GM_EPERM: return -CLOAK_EPERM;
	case GM_EIO: break;
	}
	return -CLOAK_EIO;
}

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

static uint64_t window_first(void)
{
	return CLOAK_GPA_MONITOR_WINDOW / CLOAK_PAGE_SIZE;
}

bool gm_touches_window(uint64_t first, uint64_t count)
{
	uint64_t w = window_first();
	return first < w + CLOAK_MONITOR_WINDOW_PAGES && w < first + count;
}

static struct guestmem *create(enum gm_backend backend, uint64_t size, int kvm_vm_fd,
			       bool keep_fd, struct fail *f)
{
	if (size == 0 || size % CLOAK_PAGE_SIZE) {
		fail_set(f, CLOAK_EXIT_USAGE, "guest memory size %llu is not a positive multiple "
			 "of 4 KiB", (unsigned long long)size);
		return NULL;
	}
	struct guestmem *gm = calloc(1, sizeof *gm);
	if (!gm || sharemap_init(&gm->shared, size / CLOAK_PAGE_SIZE) != 0) {
		free(gm);
		fail_set(f, CLOAK_EXIT_INTERNAL, "out of memory for guest memory bookkeeping");
		return NULL;
	}
	if (membackend_create(&gm->mb, backend, size, kvm_vm_fd, keep_fd, f)) {
		sharemap_free(&gm->shared);
		free(gm);
		return NULL;
	}
	/* The monitor window is shared from the start and stays so. */
	if (size >= CLOAK_GPA_MONITOR_WINDOW + CLOAK_MONITOR_WINDOW_PAGES * CLOAK_PAGE_SIZE)
		sharemap_set(&gm->shared, window_first(), CLOAK_MONITOR_WINDOW_PAGES);
	return gm;
}

struct guestmem *gm_create(enum gm_backend backend, uint64_t size, int kvm_vm_fd,
			   struct fail *f)
{
	return create(backend, size, kvm_vm_fd, false, f);
}

struct guestmem *gm_create_inspectable(enum gm_backend backend, uint64_t size, int kvm_vm_fd,
				       struct fail *f)
{
	return create(backend, size, kvm_vm_fd, true, f);
}

void gm_for_each_run(struct guestmem *gm, bool shared,
		     void (*fn)(struct guestmem *gm, uint64_t first, uint64_t count))
{
	uint64_t n = gm->shared.npages;
	for (uint64_t p = 0; p < n;) {
		bool s = sharemap_all_set(&gm->shared, p, 1);
		uint64_t end = p + 1;
		while (end < n && sharemap_all_set(&gm->shared, end, 1) == s)
			end++;
		if (s == shared)
			fn(gm, p, end - p);
		p = end;
	}
}

void gm_unmap_run(struct guestmem *gm, uint64_t first, uint64_t count)
{
	munmap(gm->mb.base + first * CLOAK_PAGE_SIZE, count * CLOAK_PAGE_SIZE);
}

void gm_unmap_shared_in(struct guestmem *gm, uint64_t first, uint64_t count)
{
	for (uint64_t p = first; p < first + count; p++)
		if (sharemap_all_set(&gm->shared, p, 1))
			gm_unmap_run(gm, p, 1);
}

static void wipe_run(struct guestmem *gm, uint64_t first, uint64_t count)
{
	explicit_bzero(gm->mb.base + first * CLOAK_PAGE_SIZE, count * CLOAK_PAGE_SIZE);
	gm->wiped += count * CLOAK_PAGE_SIZE;
}

uint64_t gm_destroy(struct guestmem *gm)
{
	if (!gm)
		return 0;
	if (gm->mb.given_up) {
		/* Only the shared pages are still mapped: wipe those here; the
		 * private ones were the vCPU's to wipe (x86/vcpu_wipe.h). */
		gm_for_each_run(gm, true, wipe_run);
		munmap(gm->mb.base, gm->mb.size);
		gm->mb.base = NULL;
	}
	uint64_t wiped = membackend_release(&gm->mb) + gm->wiped;
	sharemap_free(&gm->shared);
	free(gm);
	return wiped;
}

uint64_t gm_size(const struct guestmem *gm) { return gm->mb.size; }
uint64_t gm_host_protections(const struct guestmem *gm) { return gm->mb.protections; }
const char *gm_describe(const struct guestmem *gm) { return gm->mb.describe; }
enum gm_backend gm_backend(const struct guestmem *gm) { return gm->mb.kind; }
bool gm_protected(const struct guestmem *gm) { return gm->protect; }
uint64_t gm_refused(const struct guestmem *gm) { return gm->refused; }
uint64_t gm_shared_pages(const struct guestmem *gm) { return gm->shared.nshared; }

void gm_protect(struct guestmem *gm)
{
	if (gm->protect)
		return;
	gm->protect = true;
	if (!gm->mb.can_give_up)
		return;
	/* The monitor gives up guest memory: every private page leaves its
	 * address space and the descriptor is closed, so nothing in the
	 * monitor can reach those pages or map them again; KVM runs the guest
	 * from the memslot's guest_memfd binding. The shared pages stay
	 * mapped: they are the window the monitor does I/O through. From now
	 * on the fault handler wipes nothing (gm_emergency_wipe): the vCPU
	 * wipe at an orderly exit covers private pages, gm_destroy the rest;
	 * after a fault of the monitor no wipe runs. */
	gm->mb.given_up = true;
	gm_for_each_run(gm, false, gm_unmap_run);
	if (gm->mb.fd >= 0)
		close(gm->mb.fd);
	gm->mb.fd = -1;
	gm->mb.protections |= CLOAK_PROT_NO_VMM_MAP;
}

bool gm_emergency_wipe(void *arg)
{
	struct guestmem *gm = arg;
	if (gm->mb.given_up)
		return false;
	explicit_bzero(gm->mb.base, gm->mb.size);
	return true;
}

bool gm_gave_up(const struct guestmem *gm)
{
	return gm->mb.given_up;
}

void gm_slot(const struct guestmem *gm, struct gm_slot *out)
{
	out->userspace_addr = (uint64_t)(uintptr_t)gm->mb.base;
	out->size = gm->mb.size;
	out->guest_memfd = gm->mb.is_guest_memfd ? gm->mb.fd : -1;
	out->guest_memfd_offset = 0;
}

bool gm_backing_id(const struct guestmem *gm, uint64_t *dev, uint64_t *ino)
{
	struct stat st;
	if (gm->mb.fd < 0 || fstat(gm->mb.fd, &st) != 0)
		return false;
	*dev = st.st_dev;
	*ino = st.st_ino;
	return true;
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

/* The fd helpers: one system call on the judged range. */
enum fd_op { FD_PREAD, FD_PWRITE, FD_READ, FD_WRITE };

static enum gm_status fd_io(struct guestmem *gm, enum fd_op op, int fd, uint64_t start,
			    uint64_t len, int64_t off, uint64_t *done)
{
	*done = 0;
	enum gm_status s = judge(gm, start, len);
	if (s != GM_OK)
		return s;
	unsigned char *p = gm->mb.base + start;
	ssize_t n;
	switch (op) {
	case FD_PREAD: n = pread(fd, p, len, off); break;
	case FD_PWRITE: n = pwrite(fd, p, len, off); break;
	case FD_READ: n = read(fd, p, len); break;
	default: n = write(fd, p, len); break;
	}
	if (n < 0)
		return GM_EIO;
	*done = (uint64_t)n;
	return GM_OK;
}

enum gm_status gm_pread(struct guestmem *gm, int fd, gpa_t dst, uint64_t len, int64_t off,
			uint64_t *done)
{
	return fd_io(gm, FD_PREAD, fd, dst.v, len, off, done);
}

enum gm_status gm_pwrite(struct guestmem *gm, int fd, gpa_t src, uint64_t len, int64_t off,
			 uint64_t *done)
{
	return fd_io(gm, FD_PWRITE, fd, src.v, len, off, done);
}

enum gm_status gm_read_fd(struct guestmem *gm, int fd, gpa_t dst, uint64_t len, uint64_t *done)
{
	return fd_io(gm, FD_READ, fd, dst.v, len, 0, done);
}

enum gm_status gm_write_fd(struct guestmem *gm, int fd, gpa_t src, uint64_t len, uint64_t *done)
{
	return fd_io(gm, FD_WRITE, fd, src.v, len, 0, done);
}

enum gm_status gm_share_range(struct guestmem *gm, gpa_t g, uint64_t npages,
				  uint64_t *first)
{
	uint64_t bytes, end;
	if (g.v % CLOAK_PAGE_SIZE || npages == 0)
		return GM_EINVAL;
	if (__builtin_mul_overflow(npages, CLOAK_PAGE_SIZE, &bytes) ||
	    __builtin_add_overflow(g.v, bytes, &end) || end > gm->mb.size)
		return GM_EFAULT;
	*first = g.v / CLOAK_PAGE_SIZE;
	return GM_OK;
}

enum gm_status gm_share_in_view(struct guestmem *gm, gpa_t g, uint64_t npages, bool fixed)
{
	uint64_t first;
	enum gm_status s = gm_share_range(gm, g, npages, &first);
	if (s != GM_OK)
		return s;
	if (fixed)
		return sharemap_all_set(&gm->shared, first, npages) ? GM_OK : GM_EPERM;
	sharemap_set(&gm->shared, first, npages);
	return GM_OK;
}

enum gm_status gm_unshare_in_view(struct guestmem *gm, gpa_t g, uint64_t npages, bool unmap)
{
	uint64_t first;
	enum gm_status s = gm_share_range(gm, g, npages, &first);
	if (s != GM_OK)
		return s;
	if (gm_touches_window(first, npages))
		return GM_EPERM;
	if (unmap)
		gm_unmap_shared_in(gm, first, npages);
	sharemap_clear(&gm->shared, first, npages);
	return GM_OK;
}

/* Once the monitor gave memory up, the shared window is fixed: a page it
 * no longer maps cannot be shared again (there is nothing left to map it
 * with), and an unshared page is unmapped for good. */
enum gm_status gm_share(struct guestmem *gm, gpa_t g, uint64_t npages)
{
	return gm_share_in_view(gm, g, npages,
				gm->mb.given_up || (gm->window_fixed && gm->protect));
}

enum gm_status gm_unshare(struct guestmem *gm, gpa_t g, uint64_t npages)
{
	return gm_unshare_in_view(gm, g, npages, gm->mb.given_up);
}

bool gm_is_shared(const struct guestmem *gm, gpa_t g, uint64_t len)
{
	uint64_t end;
	if (len == 0 || __builtin_add_overflow(g.v, len, &end) || end > gm->mb.size)
		return false;
	uint64_t first = g.v / CLOAK_PAGE_SIZE, last = (end - 1) / CLOAK_PAGE_SIZE;
	return sharemap_all_set(&gm->shared, first, last - first + 1);
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

void gm_fix_window(struct guestmem *gm)
{
	gm->window_fixed = true;
	gm->mb.protections |= CLOAK_PROT_DEVICES_APART;
}

void gm_inherit_on_fork(struct guestmem *gm, bool on)
{
	if (gm->mb.base)
		madvise(gm->mb.base, gm->mb.size, on ? MADV_DOFORK : MADV_DONTFORK);
}

void gm_inspect_force_give_up(struct guestmem *gm)
{
	gm->mb.can_give_up = true;
}

int gm_inspect_dup_fd(const struct guestmem *gm)
{
	return gm->mb.fd >= 0 ? dup(gm->mb.fd) : -1;
}

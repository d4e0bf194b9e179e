/* SPDX-License-Identifier: ISC */
/*
 * Guest memory: the only module of the monitor that can reach guest RAM.
 *
 * It owns the host mapping of guest memory (made by a backend, backend.h)
 * and hands out no pointer into it. Every access the monitor makes is a
 * checked access: gm_copy_from()/gm_copy_to() and the fd helpers judge the
 * whole range first (inside memory, no wrap-around and, once the guest has
 * enabled protection, every page shared), and either do all of it or none.
 * On release the memory is wiped before it is unmapped.
 *
 * Every function that can refuse returns enum gm_status; gm_status_abi()
 * is the one translation into the ABI's CLOAK_E* codes.
 */
#ifndef CLOAK_MEM_GUESTMEM_H
#define CLOAK_MEM_GUESTMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fail.h"

/* A guest-physical address. A struct, so host code cannot dereference it
 * or mix it up with a host pointer or a length by accident. */
typedef struct {
	uint64_t v;
} gpa_t;
static inline gpa_t gpa(uint64_t v)
{
	return (gpa_t){ v };
}

enum gm_backend {
	GM_BACKEND_SHARED, /* plain memfd: no protection */
	GM_BACKEND_SECRET, /* memfd_secret */
	GM_BACKEND_GMEM,   /* guest_memfd */
	GM_BACKEND_ANON,   /* anonymous memory: unit tests and fuzzing only */
};

/* "secret", "gmem", "shared", "anon". */
const char *gm_backend_name(enum gm_backend kind);
/* The ABI's CLOAK_BACKEND_* for a backend (boot info). */
uint64_t gm_backend_abi(enum gm_backend kind);

/* Result of a checked access or a sharing change. */
enum gm_status {
	GM_OK = 0,
	GM_EFAULT, /* range outside guest memory, or gpa+len wraps */
	GM_EACCES, /* protection on and a page of the range is not shared */
	GM_EINVAL, /* misaligned address or zero pages (SHARE/UNSHARE) */
	GM_EPERM,  /* SHARE of a page the monitor gave up, or UNSHARE of
		    * the monitor window */
	GM_EIO,    /* the host I/O itself failed: errno says why */
};
/* 0 for GM_OK, else the negative CLOAK_E* code the guest gets. */
int64_t gm_status_abi(enum gm_status s);

struct guestmem;

/* Allocates `size` bytes (page multiple) of guest memory from `backend`
 * (the VM's fd is needed for guest_memfd). NULL on failure, with a
 * one-line reason in *f. */
struct guestmem *gm_create(enum gm_backend backend, uint64_t size, int kvm_vm_fd,
			   struct fail *f);
/* Wipes every page the monitor still maps that may hold data, then
 * unmaps. NULL is fine. Returns the bytes wiped. */
uint64_t gm_destroy(struct guestmem *gm);

uint64_t gm_size(const struct guestmem *gm);
enum gm_backend gm_backend(const struct guestmem *gm);
/* CLOAK_PROT_* flags this memory has on this host (what PROTECT reports
 * to the guest), and one line saying what they are and how they are
 * known. */
uint64_t gm_host_protections(const struct guestmem *gm);
const char *gm_describe(const struct guestmem *gm);

/* What KVM needs to register the memslot. The address is an integer on
 * purpose: it is for the kernel, not for dereferencing. */
struct gm_slot {
	uint64_t userspace_addr;
	uint64_t size;
	int guest_memfd; /* -1 unless the backend is gmem */
	uint64_t guest_memfd_offset;
};
void gm_slot(const struct guestmem *gm, struct gm_slot *out);
/* The backing file's device and inode, while the monitor holds its
 * descriptor (false otherwise). */
bool gm_backing_id(const struct guestmem *gm, uint64_t *dev, uint64_t *ino);

/* Checked copies: the whole range or nothing. len 0 always succeeds (even
 * at gpa == size). */
enum gm_status gm_copy_from(struct guestmem *gm, void *dst, gpa_t src, uint64_t len);
enum gm_status gm_copy_to(struct guestmem *gm, gpa_t dst, const void *src, uint64_t len);
/* Zeroes a guest range (checked like gm_copy_to). */
enum gm_status gm_zero(struct guestmem *gm, gpa_t dst, uint64_t len);
/* Judges [start, start+len) as the copies would, copying nothing. */
enum gm_status gm_check(struct guestmem *gm, gpa_t start, uint64_t len);

/* Direct I/O between a host file descriptor and guest memory, judged like
 * the copies: pread/pwrite/read/write of the range. GM_OK with *done the
 * bytes moved (0: end of file); GM_EIO with errno from the system call;
 * any other status: refused, nothing moved. */
enum gm_status gm_pread(struct guestmem *gm, int fd, gpa_t dst, uint64_t len, int64_t off,
			uint64_t *done);
enum gm_status gm_pwrite(struct guestmem *gm, int fd, gpa_t src, uint64_t len, int64_t off,
			 uint64_t *done);
enum gm_status gm_read_fd(struct guestmem *gm, int fd, gpa_t dst, uint64_t len,
			  uint64_t *done);
enum gm_status gm_write_fd(struct guestmem *gm, int fd, gpa_t src, uint64_t len,
			   uint64_t *done);

/* The guest-driven protocol. Protection, once on, stays on. Where KVM runs
 * the memory without the monitor's mapping (guest_memfd on VMX/SVM), the
 * monitor then gives it up: private pages are unmapped, the descriptor
 * closed, and CLOAK_PROT_NO_VMM_MAP reported. */
bool gm_protected(const struct guestmem *gm);
void gm_protect(struct guestmem *gm);
/* The monitor no longer maps the private pages: they must be wiped by
 * the vCPU (x86/vcpu_wipe.h) before release. */
bool gm_gave_up(const struct guestmem *gm);
/* Page-granular; gpa page aligned, npages > 0, range inside memory.
 * Sharing a shared page or unsharing a private one is not an error. The
 * monitor window (CLOAK_GPA_MONITOR_WINDOW) cannot be unshared (GM_EPERM);
 * once the monitor gave memory up, only pages still shared can be shared
 * (GM_EPERM otherwise: the shared window is fixed at PROTECT). */
enum gm_status gm_share(struct guestmem *gm, gpa_t gpa, uint64_t npages);
enum gm_status gm_unshare(struct guestmem *gm, gpa_t gpa, uint64_t npages);
bool gm_is_shared(const struct guestmem *gm, gpa_t gpa, uint64_t len);

/* The split into a vCPU runner and a device process (docs/design.md, "Two
 * processes"). gm_fix_window: from PROTECT on, SHARE takes only pages
 * shared then, and PROTECT reports CLOAK_PROT_DEVICES_APART.
 * gm_inherit_on_fork: whether a fork's child inherits the mapping
 * (normally not). The device process's side is device_view.h. */
void gm_fix_window(struct guestmem *gm);
void gm_inherit_on_fork(struct guestmem *gm, bool on);

/* For the fault handler (process/signals.h), async-signal-safe: zeroes
 * all of guest memory and returns true, or returns false where the
 * monitor gave it up (it maps no private page to zero; the kernel frees
 * those unwiped, as after SIGKILL). `arg` is the struct guestmem. */
bool gm_emergency_wipe(void *arg);

/* Counters (for --verbose and tests). */
uint64_t gm_refused(const struct guestmem *gm);
uint64_t gm_shared_pages(const struct guestmem *gm);
/* With --verbose: log refused accesses (the first few) on stderr. */
void gm_set_log(struct guestmem *gm, bool on);

/* Calls fn with a copy of every shared page, in address order: what the
 * host could see (--dump-shared). */
void gm_for_each_shared_page(struct guestmem *gm,
			     void (*fn)(void *ctx, uint64_t gpa, const void *page),
			     void *ctx);

#endif

/*
 * Guest memory: the only module of the monitor that can reach guest RAM.
 *
 * It owns the host mapping of guest memory (created by a backend, see
 * membackend.h) and hands out no pointer into it. Every access the monitor
 * makes goes through gm_copy_from()/gm_copy_to() (the seed's
 * copy_from_guest/copy_to_guest), which check bounds and overflow and, once
 * the guest has enabled protection, that every page of the range is shared.
 * On release the memory is wiped before it is unmapped.
 */
#ifndef CLOAK_GUESTMEM_H
#define CLOAK_GUESTMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
	GM_BACKEND_SHARED = 0, /* plain memfd: no protection */
	GM_BACKEND_SECRET = 1, /* memfd_secret */
	GM_BACKEND_GMEM = 2,   /* guest_memfd */
	GM_BACKEND_ANON = 3,   /* anonymous memory: unit tests and fuzzing only */
};

struct guestmem;

/* "secret", "gmem", "shared", "anon". */
const char *gm_backend_name(enum gm_backend kind);

/* Allocates `size` bytes (page multiple) of guest memory from `backend`.
 * On failure returns NULL and writes a one-line reason (what is wrong and
 * what to do) into err; *exit_status gets the CLOAK_EXIT_* to use. */
struct guestmem *gm_create(enum gm_backend backend, uint64_t size, int kvm_vm_fd,
			   char *err, size_t errlen, int *exit_status);
/* Wipes every page the guest may have touched, then unmaps. NULL is fine.
 * Returns the bytes wiped (the resident part of guest memory). */
uint64_t gm_destroy(struct guestmem *gm);

uint64_t gm_size(const struct guestmem *gm);
/* CLOAK_PROT_* flags this memory has on this host (what PROTECT reports to
 * the guest), and one line saying what they are and how they are known. */
uint64_t gm_host_protections(const struct guestmem *gm);
const char *gm_describe(const struct guestmem *gm);
enum gm_backend gm_backend(const struct guestmem *gm);

/* What KVM needs to register the memslot. The address is an integer on
 * purpose: it is for the kernel, not for dereferencing. */
struct gm_slot {
	uint64_t userspace_addr;
	uint64_t size;
	int guest_memfd; /* -1 unless backend is GMEM */
	uint64_t guest_memfd_offset;
};
void gm_slot(const struct guestmem *gm, struct gm_slot *out);

/* Result of a checked access. */
enum gm_status {
	GM_OK = 0,
	GM_EFAULT, /* range outside guest memory, or gpa+len wraps */
	GM_EACCES, /* protection on and a page of the range is not shared */
};

/* Checked copies. Either the whole range is accessible and copied, or
 * nothing is copied. len 0 always succeeds (even at gpa == size). */
enum gm_status gm_copy_from(struct guestmem *gm, void *dst, gpa_t src, uint64_t len);
enum gm_status gm_copy_to(struct guestmem *gm, gpa_t dst, const void *src, uint64_t len);
/* Zero a guest range (checked like gm_copy_to). */
enum gm_status gm_zero(struct guestmem *gm, gpa_t dst, uint64_t len);
/* Checks that [start, start+len) is accessible now, copying nothing. */
enum gm_status gm_check(struct guestmem *gm, gpa_t start, uint64_t len);

/* Direct I/O between a host file descriptor and guest memory, checked like
 * the copies above (pread/pwrite/read/write into the range). Returns bytes
 * moved, or -1 with errno (EFAULT/EACCES for a refused range). */
int64_t gm_pread(struct guestmem *gm, int fd, gpa_t dst, uint64_t len, int64_t off);
int64_t gm_pwrite(struct guestmem *gm, int fd, gpa_t src, uint64_t len, int64_t off);
int64_t gm_read_fd(struct guestmem *gm, int fd, gpa_t dst, uint64_t len);
int64_t gm_write_fd(struct guestmem *gm, int fd, gpa_t src, uint64_t len);

/* Protection state (the guest-driven protocol). */
bool gm_protected(const struct guestmem *gm);
/* Returns 0, or -CLOAK_EIO if KVM refused to make the memory private
 * (gmem with private attributes only; protection then stays off). */
int gm_protect_enable(struct guestmem *gm);
/* Page-granular; gpa must be page aligned, npages > 0, range inside memory.
 * Returns 0 or a negative CLOAK_E* code. Sharing a shared page or
 * unsharing a private one is not an error (idempotent). */
int gm_share(struct guestmem *gm, gpa_t gpa, uint64_t npages);
int gm_unshare(struct guestmem *gm, gpa_t gpa, uint64_t npages);
bool gm_is_shared(const struct guestmem *gm, gpa_t gpa, uint64_t len);

/* Counters of refused accesses (for --verbose and tests). */
uint64_t gm_refused(const struct guestmem *gm);
uint64_t gm_shared_pages(const struct guestmem *gm);
/* With --verbose: log refused accesses (the first few) on stderr. */
void gm_set_log(struct guestmem *gm, bool on);

/* Test hook: a dup of the backing fd (memfd/secret/gmem) or -1, so a test
 * can look at the memory after gm_destroy() and see it was wiped. */
int gm_debug_dup_fd(const struct guestmem *gm);
/* Test hook: the secret backend normally closes its descriptor once the
 * memory is mapped; with this on (before gm_create) it keeps it, so that
 * gm_debug_dup_fd() has something to return. */
void gm_debug_keep_fd(bool on);
/* Test hook: make this memory convert pages in KVM on PROTECT, SHARE and
 * UNSHARE as on a host with private memory attributes (the calls go to
 * gmem_ioctl, which the test replaces). */
void gm_debug_make_convertible(struct guestmem *gm, int vm_fd);

/* Test hook: calls fn with a copy of every shared page's content. */
void gm_for_each_shared_page(struct guestmem *gm,
			     void (*fn)(void *ctx, uint64_t gpa, const void *page),
			     void *ctx);

#endif

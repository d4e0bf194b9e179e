/*
 * Memory backends for guest RAM. Private to guestmem.c: no other monitor
 * file includes this header (a unit test checks), so the host mapping of
 * guest memory is reachable only through the checked-access functions.
 */
#ifndef CLOAK_MEMBACKEND_H
#define CLOAK_MEMBACKEND_H

#include "guestmem.h"

struct membacking {
	enum gm_backend kind;
	unsigned char *base; /* host mapping, MAP_SHARED or anonymous */
	uint64_t size;
	int fd;       /* memfd / memfd_secret / guest_memfd, or -1 */
	int pagemap_fd; /* /proc/self/pagemap for the wipe (secret), or -1 */
	bool is_gmem; /* fd is a guest_memfd (memslot takes it) */
	uint64_t gmem_flags; /* the guest_memfd flags asked for */
	/* gmem on a host with private memory attributes: PROTECT and
	 * SHARE/UNSHARE also convert pages in KVM (gmem_set_private). */
	bool convertible;
	int vm_fd;
	bool skip_wipe; /* release without wiping (pages unreachable) */
	/* CLOAK_PROT_* this memory has on this host, each verified or implied
	 * by what the kernel accepted (see membackend.c), never assumed. */
	uint64_t protections;
	char describe[256]; /* one line for --verbose */
};

/* Test hook (gm_debug_keep_fd): keep the secret backend's descriptor open. */
extern bool membackend_keep_fd;

int membackend_create(struct membacking *mb, enum gm_backend kind, uint64_t size,
		      int kvm_vm_fd, char *err, size_t errlen, int *exit_status);
/* Zeroes every resident page, then unmaps and closes. */
uint64_t membackend_release(struct membacking *mb); /* returns bytes wiped */
/* Which of n pages from offset `off` (page aligned) may hold data: bit 0
 * of vec[i]. 0, or -1 if it cannot tell. */
int membackend_resident(struct membacking *mb, uint64_t off, uint64_t n, unsigned char *vec);
/* Zeroes the pages that may hold data; returns bytes wiped. */
uint64_t membackend_wipe(struct membacking *mb);

#endif

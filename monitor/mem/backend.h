/* SPDX-License-Identifier: ISC */
/*
 * Memory backends for guest RAM. Private to the mem/ folder: no file
 * outside it includes this header (tests/unit/structure.bats checks), so
 * the host mapping of guest memory is reachable only through the checked
 * accesses of guestmem.h.
 */
#ifndef CLOAK_MEM_BACKEND_H
#define CLOAK_MEM_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "guestmem.h"

struct membacking {
	enum gm_backend kind;
	unsigned char *base; /* host mapping, MAP_SHARED or anonymous */
	uint64_t size;
	int fd;         /* memfd / memfd_secret / guest_memfd, or -1 */
	int pagemap_fd; /* /proc/self/pagemap for the wipe (secret), or -1 */
	bool is_guest_memfd; /* fd is a guest_memfd (the memslot takes it) */
	uint64_t guest_memfd_flags; /* the flags it was created with */
	/* KVM runs this memory without the monitor's mapping (guest_memfd on
	 * a KVM that runs guest code natively): at PROTECT the monitor unmaps
	 * every private page and closes fd (guestmem.c). */
	bool can_give_up;
	bool given_up;
	/* CLOAK_PROT_* this memory has on this host, each verified or implied
	 * by what the kernel accepted (see backend.c), never assumed. */
	uint64_t protections;
	char describe[400]; /* one line for --verbose */
};

/* The start-up check behind CLOAK_PROT_NO_GUP: whether GUP refuses the
 * page at addr (process_vm_readv on it fails with EFAULT). */
bool membackend_gup_refused(const void *addr);

/* keep_fd: keep the backing descriptor open even where the backend
 * normally closes it (secret); only `cloak check` and tests ask for it
 * (inspect.h). */
int membackend_create(struct membacking *mb, enum gm_backend kind, uint64_t size,
		      int kvm_vm_fd, bool keep_fd, struct fail *f);
/* Zeroes every page that may hold data, then unmaps and closes. Returns
 * the bytes wiped. */
uint64_t membackend_release(struct membacking *mb);

/* wipe.c: which of n pages from offset `off` (page aligned) may hold
 * data (bit 0 of vec[i]); 0, or -1 if it cannot tell. */
int membackend_resident(struct membacking *mb, uint64_t off, uint64_t n, unsigned char *vec);
/* wipe.c: zeroes the pages that may hold data; returns bytes wiped. */
uint64_t membackend_wipe(struct membacking *mb);

#endif

/* SPDX-License-Identifier: ISC */
/*
 * guest_memfd: probing what the host's KVM offers and creating guest RAM
 * from it. cloak uses a mappable guest_memfd that starts shared
 * (GUEST_MEMFD_FLAG_MMAP | INIT_SHARED, Linux 6.18+), the only kind a
 * default VM can run from and the monitor can load an image into.
 */
#ifndef CLOAK_MEM_GUEST_MEMFD_H
#define CLOAK_MEM_GUEST_MEMFD_H

#include <stdbool.h>
#include <stdint.h>

#include "fail.h"

struct guest_memfd_caps {
	bool guest_memfd;  /* KVM_CAP_GUEST_MEMFD on the VM */
	bool user_memory2; /* KVM_CAP_USER_MEMORY2 */
	uint64_t flags;    /* KVM_CAP_GUEST_MEMFD_FLAGS (0 if absent) */
};

/* Probes through KVM_CHECK_EXTENSION on the VM fd (all false for -1). */
void guest_memfd_probe(int vm_fd, struct guest_memfd_caps *out);

/* What cloak would do with a host's guest_memfd: the flags to ask for and
 * what follows from them. Pure, so that hosts these tests cannot run on are
 * unit-tested with their capabilities (tests/unit/test_host_paths.c). */
struct guest_memfd_plan {
	uint64_t flags;     /* for KVM_CREATE_GUEST_MEMFD */
	bool no_direct_map; /* pages leave the kernel direct map */
};
int guest_memfd_plan(const struct guest_memfd_caps *caps, struct guest_memfd_plan *out,
		     struct fail *f);

/* Creates a guest_memfd of `size` with the plan's flags and maps it;
 * fills *fd, *base and *plan. */
int guest_memfd_map(int vm_fd, uint64_t size, int *fd, void **base,
		    struct guest_memfd_plan *plan, struct fail *f);

#endif

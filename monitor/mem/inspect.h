/* SPDX-License-Identifier: ISC */
/*
 * Inspection of guest memory from outside the checked-access rules, for
 * `cloak check` (which proves the wipe by looking at the memory after it)
 * and for tests. The run path never includes this header
 * (tests/unit/structure.bats checks).
 */
#ifndef CLOAK_MEM_INSPECT_H
#define CLOAK_MEM_INSPECT_H

#include "guestmem.h"

/* Like gm_create, but the backing descriptor stays open even where the
 * backend normally closes it (secret), so gm_inspect_dup_fd() can return
 * it. */
struct guestmem *gm_create_inspectable(enum gm_backend backend, uint64_t size, int kvm_vm_fd,
				       struct fail *f);
/* A dup of the backing descriptor (memfd, memfd_secret kept open by
 * gm_create_inspectable, guest_memfd) or -1: a view of the memory that
 * outlives gm_destroy(), to see that it was wiped. */
int gm_inspect_dup_fd(const struct guestmem *gm);
/* Makes this memory give itself up at PROTECT whatever the host's KVM
 * (so the unit tests can check giving up on any host). */
void gm_inspect_force_give_up(struct guestmem *gm);

#endif

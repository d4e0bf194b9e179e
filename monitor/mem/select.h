/* SPDX-License-Identifier: ISC */
/*
 * Which memory backend a guest gets when the user does not say
 * (--memory=auto, the default): the strongest one that runs on this host.
 *
 *  secret  where KVM emulates guest code and reads guest memory through
 *          the monitor's mapping, so it can run from memfd_secret;
 *  gmem    where KVM runs guest code natively (VMX/SVM): it faults guest
 *          pages in with GUP, which memfd_secret refuses, but runs a
 *          mappable guest_memfd (Linux 6.18+) without the monitor's mapping;
 *  none    otherwise: a one-line refusal naming --memory=shared, the
 *          explicit choice to run without protection.
 */
#ifndef CLOAK_MEM_SELECT_H
#define CLOAK_MEM_SELECT_H

#include <stdbool.h>

#include "fail.h"
#include "guest_memfd.h"
#include "guestmem.h"

struct gm_host {
	bool hw_virt;   /* KVM runs guest code natively (kvm/kvm.h) */
	bool secretmem; /* memfd_secret works */
	struct guest_memfd_caps guest_memfd;
};

/* Probes this host; vm_fd is a VM to ask about guest_memfd. */
void gm_host_probe(int vm_fd, struct gm_host *h);
/* The same, less what gm_select() does not consult: where KVM runs guest
 * code natively, whether memfd_secret works (it cannot be guest RAM there);
 * h->secretmem is then false. The monitor's start-up path. */
void gm_host_probe_for_choice(int vm_fd, struct gm_host *h);

/* The automatic choice. Pure, so every kind of host is unit-tested. */
int gm_select(const struct gm_host *h, enum gm_backend *out, struct fail *f);

#endif

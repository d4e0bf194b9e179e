/* SPDX-License-Identifier: ISC */
/*
 * `cloak check`'s KVM probe: boots a four-instruction guest from guest
 * memory of one backend and reports whether KVM ran it, and whether KVM
 * still can when the monitor's mapping of that memory is made PROT_NONE
 * (which is what "hidden from the monitor" would need).
 */
#ifndef CLOAK_CHECK_PROBE_KVM_H
#define CLOAK_CHECK_PROBE_KVM_H

#include "mem/guestmem.h"
#include "probe.h"

/* Runs in a child process with a 10 s alarm, so a wedged KVM_RUN cannot
 * hang `cloak check`. Fills *run and refines *hidden. */
void probe_kvm_run(enum gm_backend backend, struct row_result *run, struct row_result *hidden);

#endif

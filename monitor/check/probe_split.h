/* SPDX-License-Identifier: ISC */
/*
 * `cloak check`'s probe of the split monitor (runner/device_link.h): a device
 * process made as a run makes it, over guest memory of one backend, and
 * the runner's check of its maps (process/device_maps.h).
 */
#ifndef CLOAK_CHECK_PROBE_SPLIT_H
#define CLOAK_CHECK_PROBE_SPLIT_H

#include "mem/guestmem.h"
#include "probe.h"

/* Fills *r: yes when, on this host and backend, a forked device process
 * maps private pages before PROTECT (the control) and none after, as the
 * runner reads its maps, and its sandbox refuses /dev/kvm, every ioctl
 * and mapping a descriptor. kvm_vm_fd: for a guest_memfd (else -1). */
void probe_devices_apart(enum gm_backend backend, int kvm_vm_fd, struct row_result *r);

#endif

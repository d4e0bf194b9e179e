/* SPDX-License-Identifier: ISC */
/*
 * Guest memory as the device process holds it (docs/design.md, "Two
 * processes"): the mapping it inherited at the fork, and no descriptor of
 * it. The runner decodes the guest's PROTECT, SHARE and UNSHARE and tells
 * the device process what changed (handoff/handoff.h); these apply it to
 * its view: at PROTECT every private page is unmapped, at UNSHARE after
 * PROTECT each unshared page. The runner then reads the device process's
 * maps to make sure (runner/device_maps.h). Its checked accesses are
 * guestmem.h's, judged by this view.
 */
#ifndef CLOAK_MEM_DEVICE_VIEW_H
#define CLOAK_MEM_DEVICE_VIEW_H

#include "guestmem.h"

/* In the device process, first thing after the fork: closes every
 * descriptor of guest memory; only the inherited mapping stays. */
void gm_device_adopt(struct guestmem *gm);
/* The runner's decoded changes. Each is what the runner accepted, so a
 * refusal here (a status other than GM_OK) means the two views differ. */
void gm_device_protect(struct guestmem *gm);
enum gm_status gm_device_share(struct guestmem *gm, gpa_t g, uint64_t npages);
enum gm_status gm_device_unshare(struct guestmem *gm, gpa_t g, uint64_t npages);

#endif

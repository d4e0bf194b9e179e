/* SPDX-License-Identifier: ISC */
/*
 * The fork of the device process (docs/design.md, "Two processes"): the
 * last step of set-up, after the devices, guest memory and the image are
 * set up and before the vCPU exists. The child closes every KVM
 * descriptor it inherited and becomes the device process
 * (device/serve.h); it keeps the devices and the mapping of guest memory,
 * and nothing else of the runner's. The parent becomes the runner: it
 * closes its copies of the devices and the dump file, which are the
 * device process's now, and keeps the link (runner/device_link.h).
 */
#ifndef CLOAK_SETUP_SPAWN_H
#define CLOAK_SETUP_SPAWN_H

#include <stdbool.h>

#include "device/device.h"
#include "fail.h"
#include "runner/device_link.h"

/* Forks. In the parent: 0 with *l set up and d's devices and dump file
 * closed (d->dev NULL, d->dump_fd -1); -1 with *f on failure. In the
 * child it never returns. kvm_fds: the descriptors of KVM the child must
 * not keep (n of them, -1 entries skipped). */
int spawn_device(struct device_link *l, struct device *d, const int *kvm_fds, unsigned n,
		 bool no_sandbox, struct fail *f);

#endif

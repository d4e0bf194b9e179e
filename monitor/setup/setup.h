/* SPDX-License-Identifier: ISC */
/*
 * Set-up before the fork (docs/design.md, "A run"): in the one monitor
 * process, everything both halves start from. KVM is opened (and the
 * supported CPUID asked, answered meanwhile), the devices are made from
 * --block/--channel (every image opened and socket bound now, before any
 * sandbox), the --dump-shared file created, guest memory made from the
 * chosen backend, and the image loaded into it. The fork itself is
 * spawn.h; what the runner does after it (the vCPU, the boot info, the
 * watchdog, the sandbox) is main.c's.
 */
#ifndef CLOAK_SETUP_SETUP_H
#define CLOAK_SETUP_SETUP_H

#include <stddef.h>
#include <stdint.h>

#include "cli/options.h"
#include "device/device.h"
#include "elf_load.h"
#include "fail.h"
#include "runner/runner.h"

/* Fills the runner's KVM and guest memory and the device's devices, dump
 * file and view of guest memory (the same memory, until the fork), and
 * *img from the image loaded. 0, or -1 with *f; what was made is released
 * by the caller's usual end. */
int setup_before_fork(struct runner *r, struct device *d, const struct options *o,
		      const void *image, size_t len, struct elf_image *img, struct fail *f);

#endif

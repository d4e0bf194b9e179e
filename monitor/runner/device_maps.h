/* SPDX-License-Identifier: ISC */
/*
 * The runner's check of what the device process maps (runner/device_link.h).
 *
 * The device process unmaps guest pages itself, at PROTECT (every private
 * page) and at UNSHARE (the pages unshared). A device process compromised
 * through a channel or a block image would simply not. So after it answers
 * either call, and before the vCPU runs again, the runner reads the device
 * process's /proc/PID/maps and ends the VM unless every mapping of guest
 * memory there holds only pages shared now. The descriptor is opened by
 * the device process at birth, before it reads any input, and passed to
 * the runner (handoff_send_maps; both are non-dumpable, so the runner
 * could not open it).
 *
 * What counts as guest memory: a mapping of the backing file (same device
 * and inode), or any file mapping over the address range the device
 * process inherited it at. Its sandbox allows no mremap and no mmap of a
 * descriptor, so it can map no guest page anywhere else.
 */
#ifndef CLOAK_RUNNER_DEVICE_MAPS_H
#define CLOAK_RUNNER_DEVICE_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct guestmem;

/* How to recognise guest memory in another process's maps. */
struct device_maps_file {
	uintptr_t base; /* where the device process inherited the mapping */
	uint64_t size;
	bool have_id;   /* the backing file's device and inode are known */
	unsigned dev_major, dev_minor;
	uint64_t ino;
};

/* Fills *id from gm (its mapping and, where it still holds one, its
 * descriptor). */
void device_maps_identify(struct guestmem *gm, struct device_maps_file *id);

/* 0: every mapping of guest memory in maps_fd (a /proc/PID/maps) holds
 * only pages gm has shared now. -1: one does not, or the maps could not be
 * read; why says which (one line). */
int device_maps_check(int maps_fd, struct guestmem *gm, const struct device_maps_file *id,
		      char *why, size_t why_len);

#endif

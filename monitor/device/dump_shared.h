/* SPDX-License-Identifier: ISC */
/*
 * --dump-shared=FILE: at exit, before the wipe, every page the guest
 * shared, raw, in address order: exactly what the host could see, for
 * audits and the tests that look for secrets there. Not a device.
 */
#ifndef CLOAK_DEVICE_DUMP_SHARED_H
#define CLOAK_DEVICE_DUMP_SHARED_H

#include "fail.h"
#include "mem/guestmem.h"

/* Creates FILE, which must not exist (nothing the user has is ever
 * overwritten): the descriptor, or -1 with CLOAK_EXIT_RESOURCE. */
int dump_shared_open(const char *path, struct fail *f);
/* Writes the shared pages (none when gm is NULL: no guest memory was made)
 * and closes fd; one line on stderr if it fails. Returns the pages
 * written. */
uint64_t dump_shared_write(int fd, const char *path, struct guestmem *gm);

#endif

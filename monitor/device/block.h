/* SPDX-License-Identifier: ISC */
/*
 * Block devices: raw image files (or host block devices) the guest reads
 * and writes in whole sectors. Every field of a request is validated
 * before a byte moves, so a request either fails with a CLOAK_E* code
 * having touched nothing, or transfers exactly the range asked for,
 * inside the image. Data moves between the image and guest memory through
 * the checked accesses (gm_pread/gm_pwrite).
 */
#ifndef CLOAK_DEVICE_BLOCK_H
#define CLOAK_DEVICE_BLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "cloak/abi.h"
#include "fail.h"
#include "mem/guestmem.h"

struct block_dev {
	char name[CLOAK_NAME_MAX];
	char path[256];
	int fd;
	uint64_t capacity;    /* bytes, a multiple of sector_size */
	uint32_t sector_size; /* 512 or 4096 */
	bool read_only;
};

/* NAME=PATH[,ro][,sector=512|4096]; CLOAK_EXIT_USAGE on a malformed spec. */
int block_parse(const char *spec, struct block_dev *out, struct fail *f);
/* Opens and locks the image; CLOAK_EXIT_RESOURCE when it cannot be used
 * (missing, not a file or block device, read-only without ,ro, too small,
 * in use by another process); CLOAK_EXIT_USAGE when one of the nopened
 * devices opened before it in this run holds the same file in a way that
 * conflicts (either read-write). Never blocks: a FIFO is refused, not
 * opened for reading. */
int block_open(struct block_dev *b, const struct block_dev *opened, unsigned nopened,
	       struct fail *f);
void block_close(struct block_dev *b);

/* READ or WRITE of [offset, offset+len) from/to guest [buf, buf+len).
 * 0 or a negative CLOAK_E* code. */
int64_t block_rw(struct block_dev *b, struct guestmem *gm, uint64_t op, uint64_t offset,
		 gpa_t buf, uint64_t len);
/* Everything written before is on stable storage when this returns 0. */
int64_t block_flush(struct block_dev *b);

#endif

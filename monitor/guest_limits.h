/* SPDX-License-Identifier: ISC */
/* Bounds the monitor puts on guests (a monitor contract, not the ABI's). */
#ifndef CLOAK_GUEST_LIMITS_H
#define CLOAK_GUEST_LIMITS_H

/* Guest memory: --mem, a multiple of 2 MiB in this range. */
#define CLOAK_MEM_MIN (4ull << 20)
#define CLOAK_MEM_MAX (16ull << 30)
#define CLOAK_MEM_DEFAULT (64ull << 20)
#define CLOAK_MEM_ALIGN (2ull << 20)
/* Largest guest image file the monitor reads. */
#define CLOAK_IMAGE_FILE_MAX (256ull << 20)

#endif

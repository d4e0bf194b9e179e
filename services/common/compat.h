/* SPDX-License-Identifier: ISC */
/* What Debian's prebuilt libraries (libbearssl.a, libsodium.a,
 * libmbedcrypto.a) expect of a hosted C library: see compat.c. */
#ifndef SERVICES_COMPAT_H
#define SERVICES_COMPAT_H

/* Points FS at a block with a random stack canary at %fs:0x28. Call it
 * first in main(), before any call into those libraries. */
void compat_init(void);

#endif

/* SPDX-License-Identifier: ISC */
/* <errno.h> for cloak guests: one vCPU, no threads, so errno is a plain
 * global. Values are Linux's so messages read the same on both sides. */
#ifndef CLOAK_RT_ERRNO_H
#define CLOAK_RT_ERRNO_H

extern int errno;

#ifndef EINVAL
#define EINVAL 22
#endif
#ifndef ENOMEM
#define ENOMEM 12
#endif
#ifndef ERANGE
#define ERANGE 34
#endif
#ifndef EOVERFLOW
#define EOVERFLOW 75
#endif

#endif

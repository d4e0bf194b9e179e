/* SPDX-License-Identifier: ISC */
/* The guest's errno: one vCPU, no threads, so a plain global. */
#include <errno.h>

int errno;

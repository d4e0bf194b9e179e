/* SPDX-License-Identifier: ISC */
/* The guest image file, read whole before anything else is set up, so a
 * bad image is reported as one whatever the host lacks. */
#ifndef CLOAK_SETUP_IMAGE_H
#define CLOAK_SETUP_IMAGE_H

#include <stddef.h>

#include "fail.h"

/* Reads the whole file (malloc'd; free it); refuses anything but a
 * regular file, without blocking on it (a FIFO is refused, not waited on),
 * and anything larger than CLOAK_IMAGE_FILE_MAX. NULL with
 * CLOAK_EXIT_BADIMAGE in *f. */
void *image_read(const char *path, size_t *len, struct fail *f);

#endif

/* SPDX-License-Identifier: ISC */
/*
 * The console: the guest's output on the monitor's stdout. On a terminal
 * every byte is filtered first (text.h), so a guest cannot drive the
 * user's terminal; to a file or pipe the bytes go as they are.
 */
#ifndef CLOAK_DEVICE_CONSOLE_H
#define CLOAK_DEVICE_CONSOLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Decides once, before the sandbox (isatty is an ioctl it refuses),
 * whether stdout is a terminal. */
void console_init(void);
/* Writes n guest bytes (filtered in place on a terminal); returns the
 * bytes written, which is short only if stdout failed. */
uint64_t console_write(char *buf, size_t n);

#endif

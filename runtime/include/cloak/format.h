/* SPDX-License-Identifier: ISC */
/*
 * The runtime's printf engine, with the output left to the caller: it hands
 * the text to `out` piece by piece (literal runs, padding, converted
 * fields), so a console printf can stream straight to the console without
 * a buffer the size of the whole message. vsnprintf() is this engine with
 * an `out` that copies into the caller's buffer.
 *
 * Conversions and flags: see <stdio.h>.
 */
#ifndef CLOAK_RT_FORMAT_H
#define CLOAK_RT_FORMAT_H

#include <stdarg.h>
#include <stddef.h>

/* Receives n bytes (n > 0; s is not NUL-terminated). */
typedef void cloak_format_out_fn(void *ctx, const char *s, size_t n);

/* Returns the number of bytes passed to `out`, or -1 if that exceeds
 * INT_MAX (errno = EOVERFLOW; `out` has still seen all of it). */
int cloak_vformat(cloak_format_out_fn *out, void *ctx, const char *fmt, va_list ap)
	__attribute__((format(__printf__, 3, 0)));
int cloak_format(cloak_format_out_fn *out, void *ctx, const char *fmt, ...)
	__attribute__((format(__printf__, 3, 4)));

#endif

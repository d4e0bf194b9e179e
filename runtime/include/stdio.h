/* SPDX-License-Identifier: ISC */
/*
 * <stdio.h> for cloak guests: formatting only, no FILE streams.
 *
 * Conversions: %d %i %u %o %x %X %c %s %p %%, flags "-+ #0", field width and
 * precision (digits or '*'), length modifiers hh h l ll z j t. There is no
 * floating point (guests run without SSE): %f, %e, %g, %a and any other
 * unknown conversion are copied to the output verbatim and consume no
 * argument. %n is not supported (copied verbatim) because it turns format
 * strings into write primitives.
 */
#ifndef CLOAK_RT_STDIO_H
#define CLOAK_RT_STDIO_H

#include <stdarg.h>
#include <stddef.h>

#ifndef EOF
#define EOF (-1)
#endif

/* C99 semantics: return the length the full output would have (without the
 * NUL), write at most size bytes including a terminating NUL when size > 0.
 * Return -1 if that length exceeds INT_MAX. */
int snprintf(char *restrict buf, size_t size, const char *restrict fmt, ...)
	__attribute__((format(__printf__, 3, 4)));
int vsnprintf(char *restrict buf, size_t size, const char *restrict fmt, va_list ap)
	__attribute__((format(__printf__, 3, 0)));

/* Console output; implemented by the runtime's console module. */
int printf(const char *restrict fmt, ...) __attribute__((format(__printf__, 1, 2)));
int vprintf(const char *restrict fmt, va_list ap) __attribute__((format(__printf__, 1, 0)));
int puts(const char *s);
int putchar(int c);

#endif

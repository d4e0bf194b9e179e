/* SPDX-License-Identifier: ISC */
/* Console output: printf and friends format into a small buffer that is
 * flushed through the bounce pool to the monitor's console call. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cloak/format.h"
#include "cloak/guest.h"
#include "rt.h"

static struct cloak_hc_console console_block RT_SHARED;
/* printf's buffer sits in the shared call pages: everything in it is on
 * its way to the host console anyway, and flushing it then needs no copy
 * through the bounce pool. */
static char outbuf[512] RT_SHARED;
static size_t outlen;

long cloak_console_write(const void *buf, size_t len)
{
	const char *p = buf;
	size_t done = 0;
	while (done < len) {
		size_t n = len - done;
		if (n > rt_bounce_size)
			n = rt_bounce_size;
		if (n > CLOAK_CONSOLE_MAX)
			n = CLOAK_CONSOLE_MAX;
		cloak_copy(rt_bounce, p + done, n);
		console_block.buf = (uint64_t)(uintptr_t)rt_bounce;
		console_block.len = n;
		int64_t r = cloak_hypercall(CLOAK_HC_CONSOLE, &console_block);
		if (r < 0)
			return done ? (long)done : (long)r;
		done += (size_t)r;
		if ((size_t)r < n)
			break;
	}
	return (long)done;
}

void rt_console_flush(void)
{
	if (outlen) {
		console_block.buf = (uint64_t)(uintptr_t)outbuf;
		console_block.len = outlen;
		cloak_hypercall(CLOAK_HC_CONSOLE, &console_block);
	}
	outlen = 0;
}

static void out(void *ctx, const char *s, size_t n)
{
	(void)ctx;
	while (n) {
		if (outlen == sizeof outbuf)
			rt_console_flush();
		size_t k = sizeof outbuf - outlen;
		if (k > n)
			k = n;
		cloak_copy(outbuf + outlen, s, k);
		outlen += k;
		s += k;
		n -= k;
	}
}

int vprintf(const char *restrict fmt, va_list ap)
{
	int r = cloak_vformat(out, NULL, fmt, ap);
	rt_console_flush();
	return r;
}

int printf(const char *restrict fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = vprintf(fmt, ap);
	va_end(ap);
	return r;
}

int puts(const char *s)
{
	size_t n = strlen(s);
	out(NULL, s, n);
	out(NULL, "\n", 1);
	rt_console_flush();
	return (int)n + 1;
}

int putchar(int c)
{
	char ch = (char)c;
	out(NULL, &ch, 1);
	if (ch == '\n')
		rt_console_flush();
	return (unsigned char)ch;
}

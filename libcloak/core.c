/* SPDX-License-Identifier: ISC */
/* The settings every layer reads, and how libcloak reports errors; see core.h. */
#include "core.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct cloak_config cloak_cfg;

static __thread char last_error[320];

void set_last_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_error, sizeof last_error, fmt, ap);
	va_end(ap);
}

const char *cloak_secret_last_error(void)
{
	return last_error;
}

/* One write(2), so the line survives whatever state the heap is in. */
static void say(const char *fmt, va_list ap)
{
	char msg[512];
	int n = snprintf(msg, sizeof msg, "libcloak: ");
	n += vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
	if (n > (int)sizeof msg - 2)
		n = (int)sizeof msg - 2;
	msg[n++] = '\n';
	ssize_t w = write(STDERR_FILENO, msg, (size_t)n);
	(void)w;
}

void cloak_die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	say(fmt, ap);
	va_end(ap);
	abort();
}

void cloak_misuse(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	say(fmt, ap);
	va_end(ap);
	int sig = CFG_LOAD(misuse_signal);
	if (sig)
		raise(sig);
	abort(); /* the signal was caught and returned, or there was none */
}

/* SPDX-License-Identifier: ISC */
/* How a run ends; see outcome.h. */
#include "outcome.h"

#include <stdarg.h>
#include <stdio.h>

/* One line on stderr, "cloak: " first. */
static void vline(const char *fmt, va_list ap)
{
	fputs("cloak: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

int outcome_end(struct outcome *o, int status)
{
	if (!o->stopped) {
		o->stopped = true;
		o->status = status;
	}
	return -1;
}

int outcome_fail(struct outcome *o, int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vline(fmt, ap);
	va_end(ap);
	return outcome_end(o, status);
}

void outcome_verbose(const struct outcome *o, const char *fmt, ...)
{
	if (!o->verbose)
		return;
	va_list ap;
	va_start(ap, fmt);
	vline(fmt, ap);
	va_end(ap);
}

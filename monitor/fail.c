/* SPDX-License-Identifier: ISC */
/* The error convention; see fail.h. */
#include "fail.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int fail_set(struct fail *f, int status, const char *fmt, ...)
{
	if (f->status)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f->msg, sizeof f->msg, fmt, ap);
	va_end(ap);
	f->status = status;
	return -1;
}

void fail_prefix(struct fail *f, const char *prefix)
{
	char msg[2 * sizeof f->msg];
	snprintf(msg, sizeof msg, "%s: %s", prefix, f->msg);
	memcpy(f->msg, msg, sizeof f->msg - 1); /* cut to fit, if need be */
	f->msg[sizeof f->msg - 1] = '\0';
}

/* SPDX-License-Identifier: ISC */
/* What every probe of `cloak check` reports with; see probe.h. */
#include "probe.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void probe_set(struct row_result *r, enum probe_verdict v, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->how, sizeof r->how, fmt, ap);
	va_end(ap);
	r->v = v;
}

const char *probe_errname(int e)
{
	switch (e) {
	case 0: return "success";
	case EFAULT: return "EFAULT";
	case EIO: return "EIO";
	case EPERM: return "EPERM";
	case EACCES: return "EACCES";
	case EINVAL: return "EINVAL";
	case ENOMEM: return "ENOMEM";
	case ESRCH: return "ESRCH";
	case ENOSYS: return "ENOSYS";
	default: return strerrorname_np(e) ? strerrorname_np(e) : "error";
	}
}

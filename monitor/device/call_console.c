/* SPDX-License-Identifier: ISC */
/* CONSOLE: the guest's bytes, copied out of its shared pages, on the
 * monitor's stdout (console.h). */
#include "console.h"
#include "device.h"

int dc_console(struct device *d, struct cloak_hc_console *a)
{
	char buf[CLOAK_CONSOLE_MAX];
	if (a->len > CLOAK_CONSOLE_MAX) {
		a->ret = -CLOAK_E2BIG;
		return 0;
	}
	enum gm_status s = gm_copy_from(d->gm, buf, gpa(a->buf), a->len);
	if (s != GM_OK) {
		a->ret = gm_status_abi(s);
		return 0;
	}
	a->ret = (int64_t)console_write(buf, a->len);
	return 0;
}

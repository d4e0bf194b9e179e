/* SPDX-License-Identifier: ISC */
/* Ending the guest: exit, abort, assertion failures. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloak/guest.h"
#include "rt.h"

static struct cloak_hc_exit exit_block RT_SHARED;
void (*rt_exit_drain)(void);
static struct cloak_hc_abort abort_block RT_SHARED;

static _Noreturn void halt_forever(void)
{
	for (;;)
		__asm__ volatile("hlt");
}

_Noreturn void cloak_exit(int status)
{
	rt_console_flush();
	if (rt_exit_drain)
		rt_exit_drain();
	exit_block.status = status;
	cloak_hypercall(CLOAK_HC_EXIT, &exit_block);
	halt_forever();
}

_Noreturn void exit(int status)
{
	cloak_exit(status);
}

_Noreturn void cloak_abort_msg(const char *msg)
{
	rt_console_flush();
	size_t n = msg ? strlen(msg) : 0;
	if (n > CLOAK_ABORT_MSG_MAX)
		n = CLOAK_ABORT_MSG_MAX;
	/* The message must be in shared memory for the monitor to read it;
	 * before the bounce pool exists it is sent without text. */
	if (n && rt_bounce && rt_bounce_size >= n) {
		cloak_copy(rt_bounce, msg, n);
		abort_block.msg = (uint64_t)(uintptr_t)rt_bounce;
		abort_block.msg_len = n;
	}
	abort_block.vector = CLOAK_ABORT_NO_VECTOR;
	cloak_hypercall(CLOAK_HC_ABORT, &abort_block);
	halt_forever();
}

_Noreturn void abort(void)
{
	cloak_abort_msg("abort() called");
}

_Noreturn void __cloak_assert_fail(const char *expr, const char *file, int line)
{
	char buf[256];
	snprintf(buf, sizeof buf, "assertion failed: %s (%s:%d)", expr, file, line);
	cloak_abort_msg(buf);
}

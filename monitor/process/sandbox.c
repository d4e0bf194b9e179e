/* SPDX-License-Identifier: ISC */
/* Entering the sandbox; see sandbox.h. The filters are compiled at build
 * time from the libseccomp rules in sandbox_rules.c (sandbox_gen.c writes
 * sandbox_bpf.h), so entering is two system calls: no-new-privileges, as
 * libseccomp's seccomp_load() sets it, and the filter itself. */
#include "sandbox.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox_bpf.h"

static int load(const struct sock_filter *insn, size_t n)
{
	struct sock_fprog prog = { .len = (unsigned short)n, .filter = (struct sock_filter *)insn };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

int sandbox_enter(struct fail *f)
{
	if (load(monitor_filter, sizeof monitor_filter / sizeof monitor_filter[0]) != 0)
		return fail_set(f, CLOAK_EXIT_INTERNAL, "cannot enter the seccomp sandbox: %s",
				strerror(errno));
	return 0;
}

int sandbox_enter_runner(struct fail *f)
{
	if (load(runner_filter, sizeof runner_filter / sizeof runner_filter[0]) != 0)
		return fail_set(f, CLOAK_EXIT_INTERNAL, "cannot enter the seccomp sandbox: %s",
				strerror(errno));
	return 0;
}

int sandbox_enter_devices(void)
{
	return load(devices_filter, sizeof devices_filter / sizeof devices_filter[0]) ? -1 : 0;
}

int sandbox_enter_broker(void)
{
	return load(broker_filter, sizeof broker_filter / sizeof broker_filter[0]) ? -1 : 0;
}

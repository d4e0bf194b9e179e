/* SPDX-License-Identifier: ISC */
/*
 * The sandbox's allowlists as libseccomp rules (sandbox_rules.c), added to
 * a context whose default action is SCMP_ACT_ERRNO(EPERM). Used at build
 * time only, by process/sandbox_gen.c; returns 0 or libseccomp's -errno.
 */
#ifndef CLOAK_PROCESS_SANDBOX_RULES_H
#define CLOAK_PROCESS_SANDBOX_RULES_H

#include <seccomp.h>

int sandbox_rules_monitor(scmp_filter_ctx ctx);
int sandbox_rules_broker(scmp_filter_ctx ctx);
/* The split monitor's two (runner/device_link.h). */
int sandbox_rules_runner(scmp_filter_ctx ctx);
int sandbox_rules_devices(scmp_filter_ctx ctx);

#endif

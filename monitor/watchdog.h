/*
 * Stopping a vCPU from outside: the --timeout watchdog and termination
 * signals (SIGINT, SIGTERM, SIGHUP). A handler sets kvm_run.immediate_exit,
 * so KVM_RUN returns EINTR even if the signal lands just before it is
 * entered, and a guest wedged in `vmcall` on these hosts is freed too.
 */
#ifndef CLOAK_WATCHDOG_H
#define CLOAK_WATCHDOG_H

#include <stdbool.h>
#include <stdint.h>

struct kvm_run;

/* Installs the handlers; `run` is the vCPU's shared run structure. */
int watchdog_init(struct kvm_run *run);
/* Arms a one-shot timer `ms` milliseconds from now (0 = none). */
int watchdog_arm(uint64_t ms);
bool watchdog_fired(void);
/* The termination signal that arrived, or 0. */
int watchdog_signal(void);

#endif

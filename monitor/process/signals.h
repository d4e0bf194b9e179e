/* SPDX-License-Identifier: ISC */
/*
 * Stop requests: the --timeout watchdog (SIGALRM from a POSIX timer) and
 * every signal whose default action would end the monitor.
 *
 * A request's handler sets kvm_run.immediate_exit, so KVM_RUN returns
 * EINTR even when the signal lands just before it is entered (and a
 * guest wedged in `vmcall` on a KVM that emulates guest code is freed
 * too). The POLL wait blocks requests, checks for one, and only then
 * sleeps with them unblocked again (ppoll/epoll_pwait2 swap the mask
 * atomically): a request that came before the sleep is seen by the check,
 * one that comes during it ends it; none can be consumed in between and
 * leave the sleep to run its length. SIGXFSZ is ignored, so a write past the file size limit fails
 * with EFBIG instead of killing the monitor. A fault in the monitor itself
 * (SIGSEGV, SIGBUS, SIGILL, SIGFPE raised by the CPU, or SIGABRT from its
 * own abort()) wipes what guest memory it maps and exits with
 * CLOAK_EXIT_INTERNAL; sent by another process, each is a stop request.
 */
#ifndef CLOAK_PROCESS_SIGNALS_H
#define CLOAK_PROCESS_SIGNALS_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "fail.h"

struct kvm_run;

/* Installs the handlers. Call first thing. */
int signals_init(struct fail *f);
/* From now on a stop request also sets run->immediate_exit (NULL: no
 * run structure any more, before it is unmapped). */
void signals_set_run(struct kvm_run *run);
/* Arms a one-shot timer `ms` milliseconds from now (0 = none). */
int signals_arm_watchdog(uint64_t ms, struct fail *f);

/* Around a sleep: begin blocks stop requests and says whether one has
 * already arrived (then do not sleep); sleep with signals_wait_mask();
 * end unblocks them again. */
bool signals_wait_begin(void);
const sigset_t *signals_wait_mask(void);
void signals_wait_end(void);

bool signals_watchdog_fired(void);
/* The termination signal that arrived (not the watchdog), or 0. */
int signals_stop_signal(void);

/* What the fault handler calls before it exits: wipe(arg), which must be
 * async-signal-safe and return false when it had nothing of the guest's
 * to wipe because the monitor gave that memory up (the handler then says
 * so). NULL: nothing (the device process, whose memory the runner
 * wipes). */
void signals_set_fault_wipe(bool (*wipe)(void *arg), void *arg);

#endif

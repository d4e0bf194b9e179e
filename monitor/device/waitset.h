/* SPDX-License-Identifier: ISC */
/*
 * The POLL wait: sleeps until a deadline or a device event, with stop
 * requests unblocked (process/signals.h) so that the watchdog or a
 * termination signal ends it at once. A zero timeout never sleeps.
 */
#ifndef CLOAK_DEVICE_WAITSET_H
#define CLOAK_DEVICE_WAITSET_H

#include <stdbool.h>
#include <stdint.h>

#include "registry.h"

/* Waits up to timeout_ns (UINT64_MAX: no limit) for any device in
 * wait_set to be ready; fills *ready. d may be NULL (no devices: a plain
 * sleep, and any wait_set is -CLOAK_ENOENT). Block devices are always
 * ready (their I/O is synchronous); channels as channel_wait_for() says.
 * Returns 0 or a negative CLOAK_E* code. */
int64_t waitset_wait(struct devices *d, uint64_t timeout_ns, uint64_t wait_set,
		     uint64_t *ready);

/* The readiness page (handoff/handoff.h): the devices that exist or are
 * open (*known) and those a zero-timeout POLL would find ready now
 * (*ready). d may be NULL (none). */
void waitset_readiness(struct devices *d, uint64_t *known, uint64_t *ready);
/* The device process between requests: sleeps until wake_fd (an eventfd)
 * is written, an open channel that is neither ready now nor in `published`
 * (poll bits the readiness page already says are ready) turns ready, or a
 * stop request comes; true if wake_fd was written (it is drained). */
bool waitset_idle(struct devices *d, int wake_fd, uint64_t published);

#endif

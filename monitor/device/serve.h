/* SPDX-License-Identifier: ISC */
/*
 * The device process's life (docs/design.md, "Two processes"): entered in
 * the child of the fork (setup/spawn.h), it passes its maps to the runner,
 * keeps only the mapping of guest memory, enters its sandbox and answers
 * the runner's requests (handoff/handoff.h) until the VM ends; then it
 * writes --dump-shared, closes the devices and exits.
 *
 * Stop requests (process/signals.h) reach it as they reach the runner: a
 * signal sent to the process group, or to this process alone, ends the
 * POLL it sleeps in and the VM at the reply, with the signal named in the
 * reply; the runner prints the one line that says so.
 */
#ifndef CLOAK_DEVICE_SERVE_H
#define CLOAK_DEVICE_SERVE_H

#include <stdbool.h>
#include <sys/types.h>

#include "device.h"
#include "handoff/handoff.h"

/* Never returns. runner: the parent's pid (the device process ends if it
 * is not, or when the runner dies); maps_sock: where its /proc/self/maps
 * goes. */
_Noreturn void device_serve(struct device *d, struct handoff *h, pid_t runner, int maps_sock,
			    bool no_sandbox);

/* The device process's half of the hand-off (handoff/handoff.h), apart
 * for its unit test: waits for the next request and copies it once into
 * *out. While it waits it keeps the readiness page: a channel that turns
 * ready, or a signal, ends the wait early (false, nothing taken; the
 * caller waits again). */
bool device_next_request(struct device *d, struct handoff *h, struct handoff_request *out);

#endif

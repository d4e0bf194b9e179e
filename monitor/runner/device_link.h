/* SPDX-License-Identifier: ISC */
/*
 * The runner's half of the split monitor (docs/design.md, "Two
 * processes"): the device process as the runner sees it, and how it hands
 * a call on, tells it what the guest's memory calls changed, and ends it.
 * The protocol itself is handoff/handoff.h; the device's half is
 * device/serve.h; the fork is setup/spawn.h.
 *
 * A reply out of shape or out of turn, a device process that dies, or one
 * that kept a page mapped that the guest does not share (runner/
 * device_maps.h, read after every change the device process must have
 * unmapped for: PROTECT, and UNSHARE once protected) ends the VM with
 * CLOAK_EXIT_DEVICE; the runner wipes as on any other end. A stop request
 * that reaches the runner while it waits is passed on as SIGTERM, which
 * cuts the device process's POLL.
 */
#ifndef CLOAK_RUNNER_DEVICE_LINK_H
#define CLOAK_RUNNER_DEVICE_LINK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "device_maps.h"
#include "handoff/handoff.h"

struct runner;

struct device_link {
	struct handoff h;
	pid_t pid;   /* the device process, or -1 once reaped */
	int pidfd;   /* the runner's handle on it, or -1 */
	int maps_fd; /* its /proc/PID/maps, or -1 */
	struct device_maps_file guest; /* guest memory, as it maps it */
	/* Changes not told yet: they go with the next request. */
	struct handoff_request pending;
	bool check_maps; /* a pending change makes it unmap pages */
};

/* A call the device process answers. 0: resume the vCPU; -1: the VM ended
 * (r->out says how). */
int link_call(struct runner *r, uint16_t port, unsigned size, uint32_t value);
/* A change the runner made to which pages are shared (a HANDOFF_* kind):
 * queued for the next request, or, with `now`, told at once, and the
 * device process's maps checked before the guest runs again. 0 or -1. */
int link_change(struct runner *r, uint32_t kind, uint64_t gpa, uint64_t npages, bool now);
/* Signals the device process, through its pidfd: the runner's sandbox
 * allows no kill(), so it can signal no process but this one. */
int link_signal(const struct device_link *l, int sig);
/* At the end (device_end.c): the pending changes and FINISH (the device process dumps
 * the shared pages and closes the devices), a bounded wait, SIGKILL if it
 * does not exit, and the reaping. */
void link_end(struct device_link *l);

#endif

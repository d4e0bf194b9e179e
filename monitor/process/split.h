/* SPDX-License-Identifier: ISC */
/*
 * The split monitor: a vCPU runner and a device process (the default;
 * --no-device-isolation keeps one process, for benchmarks and controls)
 * (docs/design.md, "Two processes").
 *
 * The runner is the process that opens KVM, owns the VM, the vCPU and
 * guest memory, runs KVM_RUN, gives memory up where the kernel allows,
 * does both wipes and answers stop requests. The device process is its
 * child, forked once devices and guest memory are set up and the image is
 * loaded, before the vCPU exists. It inherits the devices (the runner then
 * closes its copies) and the mapping of guest memory, but no descriptor of
 * it, of KVM or of the VM. It makes every call: the checked accesses, the
 * devices, the channels. At PROTECT it unmaps every private page; from
 * then on SHARE takes only pages shared at PROTECT, and UNSHARE unmaps.
 *
 * The hand-off is one shared page (a memfd mapped by both before the
 * fork) with a fixed-size request and reply and a futex wake-up each way.
 * The runner copies a reply once, checks its sequence number and shape,
 * and then only resumes the vCPU or ends the VM: a device process can set
 * no register and write no guest memory through it. After PROTECT and
 * UNSHARE it also reads the device process's maps (process/device_maps.h):
 * a device process that kept a page it no longer shares mapped ends the
 * VM before the guest runs again. A reply out of shape,
 * out of turn, or a device process that dies, ends the VM with
 * CLOAK_EXIT_DEVICE; the runner wipes as on any other end. If the runner
 * dies, the device process gets SIGKILL (PR_SET_PDEATHSIG).
 */
#ifndef CLOAK_PROCESS_SPLIT_H
#define CLOAK_PROCESS_SPLIT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "device_maps.h"
#include "fail.h"

struct vm;
struct split_slot;

struct split {
	pid_t pid; /* the device process, or -1 */
	int pidfd; /* the runner's handle on it, or -1 */
	struct split_slot *slot;
	uint32_t seq; /* last request sent (runner) or answered (device) */
	int maps_fd;  /* runner: the device process's /proc/PID/maps, or -1 */
	struct device_maps_file guest; /* runner: guest memory, as it maps it */
};

/* Forks the device process. In the runner: returns 0 with the devices
 * closed (vm->dev NULL) and *dump_fd closed (-1); -1 with *f on failure.
 * In the device process it never returns: it serves calls until the VM
 * ends, then dumps the shared pages (dump_fd >= 0) and closes the devices. */
int split_start(struct split *sp, struct vm *vm, int *dump_fd, const char *dump_path,
		struct fail *f);
/* Runner: a call exit (port, size, value) handed to the device process.
 * 0: resume the vCPU; -1: the VM ended (vm->stopped, vm->exit_status). */
int split_call(struct vm *vm, uint16_t port, unsigned size, uint32_t value);
/* Runner, at the end: lets the device process finish (a bounded wait),
 * kills it if it does not, and reaps it. */
void split_end(struct split *sp);

#endif

/* SPDX-License-Identifier: ISC */
/*
 * The monitor's exit statuses: the one table. `cloak --help` prints it,
 * and tests/unit/structure.bats checks that cloak(1) and the README list
 * exactly these rows. A guest's own status (0..CLOAK_EXIT_STATUS_MAX in
 * the ABI) passes through unchanged; every status above is the monitor's.
 *
 * X(status, NAME, what it means)
 */
#ifndef CLOAK_EXIT_STATUS_H
#define CLOAK_EXIT_STATUS_H

#include "cloak/abi.h"

#define CLOAK_EXIT_STATUSES(X)                                                        \
	X(240, INTERRUPTED, "stopped by a signal: SIGTERM, SIGINT, SIGHUP or another that would end it (guest memory wiped)") \
	X(246, DEVICE, "the device process died, replied out of shape, or kept a page the guest does not share mapped (guest memory wiped)") \
	X(247, RESOURCE, "a file or socket named on the command line cannot be used "     \
			 "(block image, channel socket, --dump-shared file)")              \
	X(248, INTERNAL, "internal error of the monitor")                                 \
	X(249, NOHOST, "the host lacks KVM or a needed feature (/dev/kvm, memfd_secret, " \
		       "guest_memfd, RLIMIT_MEMLOCK, other resource limits)")             \
	X(250, BADIMAGE, "bad guest image (not ELF64 x86-64, bad segments, no or wrong "  \
			 "ABI note)")                                                      \
	X(251, USAGE, "usage error")                                                      \
	X(252, WATCHDOG, "the --timeout watchdog fired")                                  \
	X(253, VIOLATION, "the guest broke the ABI (unknown port, bad argument block, "   \
			  "MMIO, halt)")                                                   \
	X(254, CRASH, "the guest crashed (triple fault, KVM internal error)")             \
	X(255, ABORT, "the guest aborted or took a CPU exception")

enum cloak_exit_status {
#define CLOAK_EXIT_ENUM_(v, NAME, text) CLOAK_EXIT_##NAME = v,
	CLOAK_EXIT_STATUSES(CLOAK_EXIT_ENUM_)
#undef CLOAK_EXIT_ENUM_
};

_Static_assert(CLOAK_EXIT_INTERRUPTED > CLOAK_EXIT_STATUS_MAX,
	       "monitor statuses lie above the guest's");

#endif

/* SPDX-License-Identifier: ISC */
/*
 * The guest's calls, as both monitor processes see them. A call is a
 * 32-bit `outl` of an argument block's guest-physical address to port
 * CLOAK_HC_PORT_BASE + nr (cloak/abi.h). Which process answers it is
 * decided here, once: the vCPU runner answers the calls that carry no host
 * input (time, random bytes, the guest's own exit, and the memory calls,
 * which it must decode itself because it owns guest memory); the device
 * process answers every call that reaches a device or the host's I/O
 * (docs/threat-model.md, row 3c, says why each is safe where it is).
 *
 * call_decode() is the one place an argument block is read: the whole
 * block, once, through the checked accesses, into a host copy the handler
 * decodes; call_encode() writes the copy back. A handler sets `ret` and
 * the OUT fields and returns 0 to resume the guest, or ends the VM through
 * its process's outcome.
 */
#ifndef CLOAK_CALLS_CALLS_H
#define CLOAK_CALLS_CALLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cloak/abi.h"
#include "mem/guestmem.h"
#include "outcome.h"

/* The calls the vCPU runner answers, X(NAME, name); every other call of
 * cloak/abi.h's CLOAK_HC_CALLS is in the device process's list. */
#define CLOAK_RUNNER_CALLS(X)                                                    \
	X(NOP, nop) X(EXIT, exit) X(ABORT, abort) X(WALLTIME, walltime)           \
	X(RANDOM, random) X(PROTECT, protect) X(SHARE, share) X(UNSHARE, unshare)
#define CLOAK_DEVICE_CALLS(X)                                                    \
	X(CONSOLE, console) X(POLL, poll) X(BLOCK_INFO, block_info)               \
	X(BLOCK_IO, block_io) X(BLOCK_BATCH, block_batch) X(CHAN_OPEN, chan_open) \
	X(CHAN_IO, chan_io) X(CHAN_XFER, chan_xfer)

enum call_side {
	CALL_NONE,   /* not a call: a port outside cloak's, or a wrong access size */
	CALL_RUNNER, /* the runner answers it */
	CALL_DEVICE, /* the device process answers it */
	CALL_UNKNOWN /* a number in cloak's range that names no call: -CLOAK_ENOSYS */
};

#define CALL_ARG_MAX 128 /* the largest argument block */

/* One call, its argument block copied in. */
struct call {
	unsigned nr;
	const char *name;
	uint64_t block; /* the block's guest-physical address */
	size_t size;    /* its size (cloak/abi.h) */
	_Alignas(8) unsigned char args[CALL_ARG_MAX];
};

/* What each process counts, for --verbose. */
struct call_counts {
	uint64_t calls[CLOAK_HC_MAX];
	uint64_t refused; /* answered with an error */
};

/* Which process answers an `outl` to `port` with an access of `size`
 * bytes; *nr is the call number when the port is cloak's. */
enum call_side call_side(uint16_t port, unsigned size, unsigned *nr);
/* Ends the VM (CLOAK_EXIT_VIOLATION) for an exit that is no call, saying
 * why. Always -1. */
int call_refuse(struct outcome *o, uint16_t port, unsigned size);
/* Answers a number in cloak's range that names no call: -CLOAK_ENOSYS in
 * its block's ret where that is reachable, else the VM ends. 0 or -1. */
int call_unknown(struct guestmem *gm, struct outcome *o, struct call_counts *n, unsigned nr,
		 uint32_t value);

/* Copies call nr's argument block at `value` in, and counts the call in n
 * (NULL: not counted, for a look at a call another process may answer).
 * 0, or -1 with the VM ended (a misaligned block, or one outside the
 * shared pages). */
int call_decode(struct guestmem *gm, struct outcome *o, struct call_counts *n, unsigned nr,
		uint32_t value, struct call *c);
/* Writes the handled block back (its ret and OUT fields). */
void call_encode(struct guestmem *gm, const struct outcome *o, struct call_counts *n,
		 const struct call *c);

/* The verbose line: calls made, refused, guest accesses refused. */
void call_counts_print(const struct outcome *o, const char *who, const struct call_counts *n,
		       uint64_t gm_refused);

#endif

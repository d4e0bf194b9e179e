/* SPDX-License-Identifier: ISC */
/*
 * Test hooks: the one interface through which tests reach inside a running
 * monitor. They exist only in the test build of the monitor
 * ($(O)/tests/cloak-hooks, compiled with CLOAK_TEST_HOOKS), never in the
 * shipped `cloak`: without it every hook below is an empty inline.
 *
 * CLOAK_TEST_HOOK (environment, read at start) selects one:
 *   sandbox-probe   at the guest's first exit, try system calls the
 *                   sandbox forbids and print what each got;
 *   fault           at the guest's first exit, fault (a real SIGSEGV) to
 *                   exercise the monitor's own crash path;
 *   abort           at the guest's first exit, abort() (the monitor's own
 *                   SIGABRT, as a failed check in the C library raises);
 *   fault-given-up  fault at the first exit after the monitor gave guest
 *                   memory up (mem/guestmem.c);
 *   signal-before-poll  a SIGTERM delivered between the guest's POLL exit
 *                   and the monitor's sleep: the race a stop request must
 *                   not lose;
 *   selfscan        at the guest's first POLL (threat_secret.elf polls once
 *                   its secret is in place), read every readable byte of the monitor's own address
 *                   space and say whether the needle is there (the needle
 *                   comes reversed in CLOAK_TEST_NEEDLE_REV, so the
 *                   environment does not hold it).
 *   sandbox-probe-devices  the same from the device process, once in its
 *                   sandbox: the calls that would reach KVM or map memory;
 *   device-garbage, device-status, device-seq, device-unsolicited
 *                   the device process's first reply
 *                   is out of shape: an unknown verdict; an end with a
 *                   status no call gives; the wrong sequence number; or
 *                   right, then followed by a reply to a request never
 *                   made (device/serve.c);
 *   device-keeps-private, device-keeps-unshared
 *                   the device process keeps its mapping of the private
 *                   pages at PROTECT, or of the pages the guest unshares
 *                   (mem/device_view.c), as a compromised one would;
 *   signal-at:PHASE, group-signal-at:PHASE
 *                   SIGTERM at the end of the named phase (the names
 *                   CLOAK_TEST_PHASES prints, and the device process's
 *                   "device process entered"), to the process that reaches
 *                   it alone or to the whole process group: a stop request
 *                   at any moment of start-up must end the run, once;
 *   no-xfer         the device process answers CHAN_XFER as a call it does
 *                   not know (-CLOAK_ENOSYS), as a monitor older than that
 *                   call would: the runtime's fallback to three calls;
 * CLOAK_TEST_PHASES=1 (combines with any hook): the monitor's monotonic
 * clock at the end of each phase of a run (parse, KVM open, memory create,
 * load, vCPU setup, sandbox, run, teardown: close, wipe, unmap...), printed
 * on stderr at exit as "phase NAME MICROSECONDS" lines, so a benchmark can
 * name where boot time goes (bench/peers-bench).
 * CLOAK_TEST_GIVE_UP=1 (combines with any hook): a guest_memfd is given up
 * at PROTECT wherever KVM runs guest code natively, even where KVM would
 * have to decode intercepted instructions from guest memory (SVM without
 * next-RIP save, as under QEMU's TCG): so the SVM tier can show that KVM
 * runs a guest without the monitor's mapping, with guests that execute
 * none of those instructions once protected.
 */
#ifndef CLOAK_TEST_HOOKS_H
#define CLOAK_TEST_HOOKS_H

#include <stdbool.h>
#include <stdint.h>

struct runner;

#ifdef CLOAK_TEST_HOOKS
void test_hooks_init(void);
void test_hooks_on_exit(struct runner *r);
void test_hooks_before_poll(void);
bool test_hooks_give_up_anyway(void);
void test_hooks_phase(const char *name);
void test_hooks_phases_print(void);
/* The device process's reply about to be published: a hook may change
 * it; non-zero: publish that sequence number after it, unasked. */
uint32_t test_hooks_device_reply(uint32_t *seq, uint32_t *verdict, int32_t *status);
/* In the device process, before its sandbox (selfscan reads its maps)
 * and in it (sandbox-probe-devices tries what its allowlist forbids). */
void test_hooks_device_enter(bool sandboxed);
/* In the device process: keep the pages PROTECT ("private") or UNSHARE
 * ("unshared") would unmap. */
bool test_hooks_device_keeps(const char *when);
/* In the device process: answer CHAN_XFER with -CLOAK_ENOSYS (no-xfer). */
bool test_hooks_no_xfer(void);
#else
static inline void test_hooks_init(void)
{
}
static inline void test_hooks_on_exit(struct runner *r)
{
	(void)r;
}
static inline void test_hooks_before_poll(void)
{
}
static inline bool test_hooks_give_up_anyway(void)
{
	return false;
}
static inline void test_hooks_phase(const char *name)
{
	(void)name;
}
static inline void test_hooks_phases_print(void)
{
}
static inline void test_hooks_device_enter(bool sandboxed)
{
	(void)sandboxed;
}
static inline uint32_t test_hooks_device_reply(uint32_t *seq, uint32_t *verdict,
					       int32_t *status)
{
	(void)seq;
	(void)verdict;
	(void)status;
	return 0;
}
static inline bool test_hooks_device_keeps(const char *when)
{
	(void)when;
	return false;
}
static inline bool test_hooks_no_xfer(void)
{
	return false;
}
#endif

#endif

/* SPDX-License-Identifier: ISC */
/* What each way out of KVM_RUN means, for people: pure functions, so each
 * kind of host's case is unit-tested on any host. */
#ifndef CLOAK_RUNNER_DIAGNOSE_H
#define CLOAK_RUNNER_DIAGNOSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cloak/abi.h"
#include "mem/guestmem.h"

/* What a KVM_RUN failure with errno `err` means for this backend: fills a
 * one-line message and returns the exit status. Pure, so the case of
 * secret memory on a KVM that faults guest pages in with GUP (VMX/SVM) is
 * unit-tested on any host. */
int run_error_diagnosis(int err, enum gm_backend backend, char *msg, size_t len);

/* What KVM's failure to emulate an instruction means: `bytes` are up to n
 * bytes at the guest's rip; n is 0 when they could not be read, and
 * `unread` says why (GM_EFAULT: rip is outside guest RAM; GM_EACCES: in a
 * page the guest has not shared). Fills a clause naming the instruction
 * where it is known. Pure. */
void run_emulation_diagnosis(const uint8_t *bytes, size_t n, enum gm_status unread, char *msg,
			     size_t len);

/* Where a guest's hlt was: KVM reports a KVM_EXIT_HLT with rip already
 * past the one-byte hlt (VMX, and SVM with or without next-RIP save), so
 * the hlt is at rip - 1 when that byte is 0xf4 (`before`) or cannot be
 * read (-1: the guest's code is private), or at rip when that byte is
 * (`at`, for a KVM that did not step over it). Fills the one-line
 * message. Pure. */
void run_hlt_diagnosis(uint64_t rip, int before, int at, char *msg, size_t len);

/* A triple fault (KVM_EXIT_SHUTDOWN): kvm_amd resets the vCPU when the
 * guest shuts down, so its rip then reads 0xfff0 and says nothing of the
 * fault; `reset` (CR0.PE clear: cloak guests never leave protected mode)
 * says the address is lost, else `rip` is where it happened. `last_rip`
 * (0: unknown) is where the guest last exited to the monitor before, named
 * when the fault's own address is lost. Pure. */
void run_shutdown_diagnosis(bool reset, uint64_t rip, uint64_t last_rip, char *msg, size_t len);

/* A CPU exception the guest's runtime trapped and reported (ABORT with a
 * vector below 32): its name and, for a page fault, what it looks like
 * (a stack overflow, KVM patching a vmcall in read-only code). Pure. */
void run_exception_diagnosis(const struct cloak_hc_abort *a, char *msg, size_t len);

#endif

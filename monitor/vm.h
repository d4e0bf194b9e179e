/*
 * One virtual machine with one vCPU: the KVM file descriptors, the guest's
 * memory and the state the hypercall handlers share.
 */
#ifndef CLOAK_VM_H
#define CLOAK_VM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cloak/abi.h"
#include "guestmem.h"

struct devices; /* block devices and channels (devices.h) */

struct vm {
	int kvm_fd, vm_fd, vcpu_fd;
	struct kvm_run *run;
	size_t run_size;
	struct guestmem *gm;
	uint64_t tsc_khz;
	bool nx;             /* the vCPU has NX: data pages are no-execute */
	uint64_t heap_start; /* first free guest page after the image */
	bool verbose, quiet;
	bool stopped;        /* a handler ended the VM; exit_status is set */
	int exit_status;
	struct devices *dev;
	uint64_t hc_calls[CLOAK_HC_MAX];
	uint64_t hc_refused; /* calls answered with an error */
};

/* Reports a fatal condition: one line on stderr ("cloak: ..."), marks the VM
 * stopped with `status`. Always returns -1 so callers can `return vm_fail()`. */
int vm_fail(struct vm *vm, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Informational line, only with --verbose. */
void vm_verbose(const struct vm *vm, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Opens /dev/kvm and creates the VM (no memory yet). One-line error and
 * exit status on failure. */
int vm_open(struct vm *vm, char *err, size_t errlen, int *status);
/* Registers guest memory as memslot 0 and creates the vCPU in long mode at
 * `entry` with %rdi = boot info. */
struct pt_range;
int vm_setup(struct vm *vm, uint64_t entry, const struct pt_range *image, unsigned nimage,
	     char *err, size_t errlen, int *status);
void vm_close(struct vm *vm);

/* Runs the vCPU until the guest exits, aborts, or a watchdog/signal stops
 * it; returns the monitor's exit status. */
int vm_run(struct vm *vm);

/* What a KVM_RUN failure with errno `err` means for this backend: fills a
 * one-line message and returns the exit status. Separate so that the
 * VMX/SVM case (EFAULT on secret memory), which cannot happen on these
 * emulating hosts, is unit-tested. */
int run_error_diagnosis(int err, enum gm_backend backend, char *msg, size_t len);

#endif

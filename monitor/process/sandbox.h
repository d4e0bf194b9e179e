/* SPDX-License-Identifier: ISC */
/*
 * The monitor's system-call allowlist (libseccomp), entered after set-up
 * and before the guest's first instruction. From then on the monitor can
 * run the vCPU, serve calls on descriptors it already holds, and exit; it
 * cannot open files, create sockets, exec, fork, ptrace, map executable
 * memory, or issue KVM ioctls other than those the run loop uses. A denied
 * call fails with EPERM, so error paths still wipe guest memory on the way
 * out. Every entry names its caller (sandbox_rules.c, libseccomp rules
 * compiled to BPF at build time by sandbox_gen.c).
 */
#ifndef CLOAK_PROCESS_SANDBOX_H
#define CLOAK_PROCESS_SANDBOX_H

#include "fail.h"

int sandbox_enter(struct fail *f);

/* The path broker's own, smaller allowlist (process/broker.h). */
int sandbox_enter_broker(void);
/* The split monitor (runner/device_link.h). The runner's: the run loop's KVM
 * ioctls, the hand-off, the wipe and exit; no socket, no file I/O but
 * stderr and the wipe's page table. The device process's: the monitor's
 * without any ioctl, and mmap of no descriptor (anonymous memory only). */
int sandbox_enter_runner(struct fail *f);
int sandbox_enter_devices(void);

#endif

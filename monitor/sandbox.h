/*
 * The monitor's syscall allowlist (libseccomp), entered after set-up and
 * before the guest's first instruction. From then on the monitor can run
 * the vCPU, serve calls on descriptors it already holds, and exit; it
 * cannot open files, create sockets, exec, ptrace, or map executable
 * memory. A denied call fails with EPERM, so error paths still wipe guest
 * memory on the way out.
 */
#ifndef CLOAK_SANDBOX_H
#define CLOAK_SANDBOX_H

#include <stddef.h>

int sandbox_enter(char *err, size_t errlen);

#endif

/*
 * Guest devices: block devices and channels (issue 4). The run loop and
 * POLL reach them only through this interface.
 */
#ifndef CLOAK_DEVICES_H
#define CLOAK_DEVICES_H

#include <stdint.h>

#include "vm.h"

/* Waits up to timeout_ns for any device in wait_set to be ready; fills
 * *ready. Returns 0 or a negative CLOAK_E* code. */
int devices_poll(struct vm *vm, uint64_t timeout_ns, uint64_t wait_set, uint64_t *ready);

#endif

/* SPDX-License-Identifier: ISC */
/*
 * Whether this host lets the monitor give a guest_memfd up at PROTECT
 * (docs/design.md, "Giving guest memory up"). Its own header so that
 * `cloak check` can ask without seeing the backends' mappings.
 */
#ifndef CLOAK_MEM_GIVE_UP_H
#define CLOAK_MEM_GIVE_UP_H

#include <stdbool.h>
#include <stddef.h>

/* true where KVM needs no mapping of guest memory to run the guest nor to
 * step over the instructions it intercepts; false with the reason in why. */
bool give_up_possible(char *why, size_t len);

#endif

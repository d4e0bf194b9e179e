/* SPDX-License-Identifier: ISC */
/* Hypercall dispatcher; see dispatch.h. */
#include "dispatch.h"

#include <string.h>

#define HC_ARG_MAX 128 /* largest argument block */

struct hc_def {
	const char *name;
	size_t arg_size;
	int (*handle)(struct vm *vm, void *args);
};

/* Typed handlers behind one untyped entry each, and the size check. */
#define HC_TRAMPOLINE_(nr, NAME, name, type)                                    \
	static int call_##name(struct vm *vm, void *args)                       \
	{                                                                       \
		return hc_##name(vm, (type *)args);                             \
	}                                                                       \
	_Static_assert(sizeof(type) <= HC_ARG_MAX && sizeof(type) % 8 == 0 &&   \
			       (nr) < CLOAK_HC_MAX,                             \
		       #name ": argument block size or call number");
CLOAK_HC_CALLS(HC_TRAMPOLINE_)
#undef HC_TRAMPOLINE_

/* Indexed by call number; a number not listed answers -CLOAK_ENOSYS. */
static const struct hc_def hc_table[CLOAK_HC_MAX] = {
#define HC_ENTRY_(nr, NAME, name, type) [nr] = { #name, sizeof(type), call_##name },
	CLOAK_HC_CALLS(HC_ENTRY_)
#undef HC_ENTRY_
};

int hc_dispatch(struct vm *vm, uint16_t port, unsigned size, uint32_t value)
{
	if (port < CLOAK_HC_PORT_BASE || port >= CLOAK_HC_PORT_BASE + CLOAK_HC_MAX)
		return vm_fail(vm, CLOAK_EXIT_VIOLATION,
			       "guest wrote to unknown I/O port 0x%x: cloak's calls use "
			       "ports 0x%x-0x%x", port, CLOAK_HC_PORT_BASE,
			       CLOAK_HC_PORT_BASE + CLOAK_HC_MAX - 1);
	unsigned nr = port - CLOAK_HC_PORT_BASE;
	if (size != 4)
		return vm_fail(vm, CLOAK_EXIT_VIOLATION,
			       "guest call on port 0x%x used a %u-byte access: calls "
			       "are 4-byte outl", port, size);
	vm->hc_calls[nr]++;
	const struct hc_def *def = &hc_table[nr];
	uint64_t block = value;
	if (!def->handle) {
		/* Unknown call number inside our range: answer ENOSYS if the
		 * block's ret field is reachable, so newer guests can probe. */
		int64_t ret = -CLOAK_ENOSYS;
		vm->hc_refused++;
		if (block % 8 == 0 && gm_copy_to(vm->gm, gpa(block), &ret, sizeof ret) == GM_OK)
			return 0;
		return vm_fail(vm, CLOAK_EXIT_VIOLATION,
			       "guest made unknown call %u with an unusable argument "
			       "block at 0x%llx", nr, (unsigned long long)block);
	}
	if (block % 8)
		return vm_fail(vm, CLOAK_EXIT_VIOLATION,
			       "%s: argument block at 0x%llx is not 8-byte aligned",
			       def->name, (unsigned long long)block);
	_Alignas(8) unsigned char args[HC_ARG_MAX];
	enum gm_status s = gm_copy_from(vm->gm, args, gpa(block), def->arg_size);
	if (s != GM_OK)
		return vm_fail(vm, CLOAK_EXIT_VIOLATION,
			       "%s: argument block [0x%llx, +%zu) is %s", def->name,
			       (unsigned long long)block, def->arg_size,
			       s == GM_EACCES ? "in a page the guest has not shared"
					      : "outside guest memory");
	if (def->handle(vm, args) != 0 || vm->stopped)
		return -1;
	int64_t ret;
	memcpy(&ret, args, sizeof ret);
	if (ret < 0)
		vm->hc_refused++;
	/* The block was readable a moment ago; it can only have become
	 * unreachable if the handler unshared it (UNSHARE of its own block). */
	if (gm_copy_to(vm->gm, gpa(block), args, def->arg_size) != GM_OK)
		vm_verbose(vm, "%s: result dropped: argument block no longer shared",
			   def->name);
	return 0;
}

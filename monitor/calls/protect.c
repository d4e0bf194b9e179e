/* SPDX-License-Identifier: ISC */
/*
 * The guest-driven protection protocol, over port I/O: PROTECT turns
 * checked access on for good; SHARE and UNSHARE move pages between private
 * (the default once protected) and shared. The work is mem/guestmem's.
 * The monitor window can never be unshared (-CLOAK_EPERM for any range that
 * touches it): the monitor needs it to wipe memory it gave up (x86/
 * vcpu_wipe.h); docs/abi.md, "Pages that can never be unshared".
 */
#include "dispatch.h"

int hc_protect(struct vm *vm, struct cloak_hc_protect *a)
{
	if (!gm_protected(vm->gm)) {
		/* The argument block itself is private from now on unless the
		 * guest shared it first; the dispatcher then drops the reply, so
		 * the runtime shares its call area before enabling protection. */
		gm_protect(vm->gm);
		vm_verbose(vm, "guest enabled memory protection (%llu pages shared)",
			   (unsigned long long)gm_shared_pages(vm->gm));
	}
	a->flags = gm_host_protections(vm->gm);
	a->ret = 0;
	return 0;
}

int hc_share(struct vm *vm, struct cloak_hc_share *a)
{
	a->ret = gm_status_abi(gm_share(vm->gm, gpa(a->gpa), a->npages));
	return 0;
}

int hc_unshare(struct vm *vm, struct cloak_hc_share *a)
{
	a->ret = gm_status_abi(gm_unshare(vm->gm, gpa(a->gpa), a->npages));
	return 0;
}

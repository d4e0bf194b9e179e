/*
 * The guest-driven protection protocol (the seed's hypercalls, over port
 * I/O): PROTECT turns checked access on for good; SHARE and UNSHARE move
 * pages between private (the default once protected) and shared.
 */
#include "hypercall.h"

static int hc_protect(struct vm *vm, void *args)
{
	struct cloak_hc_protect *a = args;
	if (!gm_protected(vm->gm)) {
		/* The argument block itself is private from now on unless the guest
		 * shared it first; the dispatcher then drops the reply, so the
		 * runtime shares its call area before enabling protection. */
		if (gm_protect_enable(vm->gm) != 0) {
			vm_verbose(vm, "KVM refused to make guest memory private");
			a->flags = 0;
			a->ret = -CLOAK_EIO;
			return 0;
		}
		vm_verbose(vm, "guest enabled memory protection (%llu pages shared)",
			   (unsigned long long)gm_shared_pages(vm->gm));
	}
	a->flags = gm_host_protections(vm->gm);
	a->ret = 0;
	return 0;
}
const struct hc_def hc_protect_def = { CLOAK_HC_PROTECT, "protect",
				       sizeof(struct cloak_hc_protect), hc_protect };

static int hc_share(struct vm *vm, void *args)
{
	struct cloak_hc_share *a = args;
	a->ret = gm_share(vm->gm, gpa(a->gpa), a->npages);
	return 0;
}
const struct hc_def hc_share_def = { CLOAK_HC_SHARE, "share", sizeof(struct cloak_hc_share),
				     hc_share };

static int hc_unshare(struct vm *vm, void *args)
{
	struct cloak_hc_share *a = args;
	a->ret = gm_unshare(vm->gm, gpa(a->gpa), a->npages);
	return 0;
}
const struct hc_def hc_unshare_def = { CLOAK_HC_UNSHARE, "unshare",
				       sizeof(struct cloak_hc_share), hc_unshare };

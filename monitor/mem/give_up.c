/* SPDX-License-Identifier: ISC */
#include "give_up.h"

#include <stdio.h>

#include "kvm/kvm.h"
#include "test_hooks.h"

bool give_up_possible(char *why, size_t len)
{
	/* A KVM that emulates guest code reads every instruction through the
	 * monitor's mapping; one that runs it natively (VMX/SVM) faults guest
	 * pages in from the guest_memfd itself, and needs the mapping only to
	 * decode the instructions it intercepts, where it cannot step over
	 * them otherwise. */
	if (!kvm_host_hw_virt()) {
		snprintf(why, len, "this host's KVM emulates guest code and reads guest memory "
			 "through that mapping");
		return false;
	}
	return kvm_steps_without_guest_reads(why, len) || test_hooks_give_up_anyway();
}

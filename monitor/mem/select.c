/* SPDX-License-Identifier: ISC */
/* The automatic backend; see select.h. */
#include "select.h"

#include "kvm/kvm.h"
#include "kvm/kvm_compat.h"
#include "secretmem.h"

void gm_host_probe(int vm_fd, struct gm_host *h)
{
	h->hw_virt = kvm_host_hw_virt();
	h->secretmem = secretmem_supported();
	guest_memfd_probe(vm_fd, &h->guest_memfd);
}

void gm_host_probe_for_choice(int vm_fd, struct gm_host *h)
{
	h->hw_virt = kvm_host_hw_virt();
	h->secretmem = !h->hw_virt && secretmem_supported();
	guest_memfd_probe(vm_fd, &h->guest_memfd);
}

int gm_select(const struct gm_host *h, enum gm_backend *out, struct fail *f)
{
	struct guest_memfd_plan plan;
	struct fail gf = { 0 };
	bool gmem = guest_memfd_plan(&h->guest_memfd, &plan, &gf) == 0;
	if (!h->hw_virt && h->secretmem) {
		*out = GM_BACKEND_SECRET;
		return 0;
	}
	if (h->hw_virt && gmem) {
		*out = GM_BACKEND_GMEM;
		return 0;
	}
	if (h->hw_virt)
		return fail_set(f, CLOAK_EXIT_NOHOST, "no protected memory runs on this host: its "
				"KVM faults guest memory in with GUP, which memfd_secret refuses, "
				"and %s; to run without protection, use --memory=shared", gf.msg);
	return fail_set(f, CLOAK_EXIT_NOHOST, "no protected memory runs on this host: "
			"memfd_secret is not available (Linux 5.14+ with secretmem), and this "
			"host's KVM reads guest memory through the monitor's mapping, so "
			"guest_memfd would protect nothing more; to run without protection, use "
			"--memory=shared");
}

/* SPDX-License-Identifier: ISC */
/* Set-up before the fork; see setup.h. */
#include "setup.h"

#include "device/dump_shared.h"
#include "mem/select.h"
#include "process/signals.h"
#include "test_hooks.h"

/* The memory backend: the one asked for, or the strongest that runs. */
static int choose_backend(int vm_fd, const struct options *o, enum gm_backend *b,
			  struct fail *f)
{
	*b = o->backend;
	if (!o->backend_auto)
		return 0;
	struct gm_host h;
	gm_host_probe_for_choice(vm_fd, &h);
	return gm_select(&h, b, f);
}

int setup_before_fork(struct runner *r, struct device *d, const struct options *o,
		      const void *image, size_t len, struct elf_image *img, struct fail *f)
{
	if (kvm_open(&r->kvm, f))
		return -1;
	test_hooks_phase("KVM open");
	/* Asked now, answered while devices, memory and the image are set up
	 * (kvm/cpuid_query.h). */
	cpuid_query_start(&r->kvm.cpuid, r->kvm.kvm_fd);
	if (r->out.verbose) {
		char line[200];
		kvm_describe(&r->kvm, line, sizeof line);
		outcome_verbose(&r->out, "host: %s", line);
	}
	if (devices_setup(&d->dev, o, f))
		return -1;
	test_hooks_phase("devices set up");
	if (o->dump_shared) {
		d->dump_fd = dump_shared_open(o->dump_shared, f);
		if (d->dump_fd < 0)
			return -1;
		d->dump_path = o->dump_shared;
	}
	enum gm_backend backend;
	if (choose_backend(r->kvm.vm_fd, o, &backend, f))
		return -1;
	r->gm = gm_create(backend, o->mem, r->kvm.vm_fd, f);
	if (!r->gm)
		return -1;
	d->gm = r->gm;
	/* Should the monitor itself fault, this is what its handler wipes. */
	signals_set_fault_wipe(gm_emergency_wipe, r->gm);
	gm_set_log(r->gm, o->verbose);
	test_hooks_phase("guest memory created");
	outcome_verbose(&r->out, "guest memory: %s%s: %s", gm_backend_name(backend),
			o->backend_auto ? " (chosen for this host)" : "", gm_describe(r->gm));
	if (elf_load(r->gm, image, len, img, f)) {
		fail_prefix(f, o->guest);
		return -1;
	}
	test_hooks_phase("image loaded");
	return 0;
}

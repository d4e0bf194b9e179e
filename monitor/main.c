/* SPDX-License-Identifier: ISC */
/*
 * cloak: boots a 64-bit ELF guest in a one-vCPU KVM VM whose memory the
 * guest can protect from the host. main() only sequences the modules and
 * guarantees guest memory is wiped on every exit path: set-up before the
 * fork (setup/), the fork of the device process (setup/spawn.h), the
 * runner's own set-up and run (runner/), and the end.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "check/check.h"
#include "cli/options.h"
#include "device/console.h"
#include "device/device.h"
#include "kvm/kvm.h"
#include "process/sandbox.h"
#include "process/signals.h"
#include "runner/boot_info.h"
#include "runner/device_link.h"
#include "runner/runner.h"
#include "setup/image.h"
#include "setup/setup.h"
#include "setup/spawn.h"
#include "test_hooks.h"
#include "x86/pagetable.h"
#include "x86/vcpu_wipe.h"

/* What main() holds from set-up to the end, to release it on any path. */
struct session {
	struct runner r;
	struct device dev;       /* until the fork, and with --no-device-isolation */
	struct device_link link; /* the device process, unless --no-device-isolation */
	bool ran;                /* the guest ran: the calls are counted */
};

/* Descriptors 0-2 closed at start would be taken by the first files the
 * monitor opens (guest memory itself), and its diagnostics would land
 * there: keep them taken. */
static void reserve_std_fds(void)
{
	for (int fd = 0; fd <= 2; fd++)
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF &&
		    open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY) < 0)
			_exit(CLOAK_EXIT_INTERNAL);
}

/* The runner's own set-up, after the fork: the vCPU, the boot info, the
 * watchdog and the sandbox. */
static int boot(struct session *s, const struct options *o, const struct elf_image *img,
		uint64_t dev_caps, struct fail *f)
{
	struct runner *r = &s->r;
	struct pt_range ranges[ELF_LOAD_MAX_PHDRS];
	for (unsigned i = 0; i < img->nseg; i++)
		ranges[i] = (struct pt_range){ img->seg[i].start, img->seg[i].end,
					       img->seg[i].write, img->seg[i].exec };
	if (vcpu_setup(&r->vcpu, &r->kvm, r->gm, img->entry, ranges, img->nseg, f))
		return -1;
	test_hooks_phase("vCPU set up");
	/* argv[0] is the guest's file name, then the user's arguments. */
	char *argv[CLOAK_ARGC_MAX];
	if (o->guest_argc + 1 > CLOAK_ARGC_MAX)
		return fail_set(f, CLOAK_EXIT_USAGE, "%d guest arguments, at most %d fit",
				o->guest_argc, CLOAK_ARGC_MAX - 1);
	const char *slash = strrchr(o->guest, '/');
	argv[0] = (char *)(slash ? slash + 1 : o->guest);
	for (int i = 0; i < o->guest_argc; i++)
		argv[i + 1] = o->guest_argv[i];
	uint64_t caps = CLOAK_CAP_PROTECT | dev_caps |
			(kvm_host_hw_virt() ? CLOAK_CAP_NATIVE_CPU : 0);
	if (boot_write_info(r->gm, r->vcpu.tsc_khz, img->highest, caps, o->guest_argc + 1, argv, f))
		return -1;
	if (r->local)
		console_init();
	signals_set_run(r->vcpu.run);
	if (signals_arm_watchdog(o->timeout_ms, f))
		return -1;
	outcome_verbose(&r->out, "guest %s: entry 0x%llx, image [0x%llx, 0x%llx), %llu MiB, TSC "
			"%llu kHz", o->guest, (unsigned long long)img->entry,
			(unsigned long long)img->lowest, (unsigned long long)img->highest,
			(unsigned long long)(o->mem >> 20), (unsigned long long)r->vcpu.tsc_khz);
	test_hooks_phase("boot info, console, watchdog");
	if (o->no_sandbox)
		outcome_verbose(&r->out, "--no-sandbox: running without the seccomp filter");
	else if (r->link ? sandbox_enter_runner(f) : sandbox_enter(f))
		return -1;
	test_hooks_phase("sandbox entered");
	return 0;
}

static int run(struct session *s, const struct options *o, struct fail *f)
{
	/* A usage error is reported as such whatever the host lacks. */
	if (devices_check(o, f))
		return -1;
	size_t len = 0;
	void *image = image_read(o->guest, &len, f);
	if (!image)
		return -1;
	/* A bad image is reported as such whatever the host lacks. */
	struct elf_image img;
	int r = elf_check(o->mem, image, len, &img, f);
	test_hooks_phase("image read and checked");
	if (r)
		fail_prefix(f, o->guest);
	else
		r = setup_before_fork(&s->r, &s->dev, o, image, len, &img, f);
	free(image);
	if (r)
		return -1;
	uint64_t dev_caps = devices_caps(s->dev.dev);
	/* The device process leaves now: after the devices, memory and image
	 * are set up, before the vCPU exists. */
	if (o->device_process) {
		const int kvm_fds[] = { s->r.kvm.kvm_fd, s->r.kvm.vm_fd };
		if (spawn_device(&s->link, &s->dev, kvm_fds, 2, o->no_sandbox, f))
			return -1;
		s->r.link = &s->link;
		test_hooks_phase("device process forked");
	} else {
		s->r.local = &s->dev;
	}
	if (boot(s, o, &img, dev_caps, f))
		return -1;
	s->ran = true;
	int status = runner_run(&s->r);
	test_hooks_phase("guest run (KVM_RUN to its exit)");
	call_counts_print(&s->r.out, s->r.link ? "runner" : "monitor", &s->r.counts,
			  gm_refused(s->r.gm));
	return status;
}

/* Releases everything; guest memory is wiped before it goes back. */
static void finish(struct session *s)
{
	struct runner *r = &s->r;
	/* The device side dumps and closes its devices first: the wipe comes
	 * after it is gone. */
	if (r->link)
		link_end(r->link);
	else
		device_finish(&s->dev, s->ran ? "devices" : NULL);
	test_hooks_phase("devices closed");
	if (r->gm && gm_gave_up(r->gm)) {
		/* The private pages are no longer the monitor's to reach: the
		 * guest's own vCPU zeroes them before KVM lets them go. */
		struct fail wf = { 0 };
		int64_t z = vcpu_wipe(&r->vcpu, r->gm, &wf);
		if (z < 0)
			fprintf(stderr, "cloak: %s: the %llu MiB of guest memory this monitor gave "
				"up go back to the kernel unwiped\n", wf.msg,
				(unsigned long long)(gm_size(r->gm) >> 20));
		else
			outcome_verbose(&r->out, "guest memory zeroed by the vCPU: %llu MiB",
					(unsigned long long)((uint64_t)z >> 20));
	}
	/* The VM goes first: once KVM holds no memslot on guest memory,
	 * unmapping it has no shadow mappings to zap and flush (measured:
	 * about half the unmap on hosts whose KVM emulates guest code). The
	 * wipe still comes before the memory goes back to the kernel. A stop
	 * request from now on has no run structure to mark. */
	signals_set_run(NULL);
	test_hooks_phase("vCPU wipe (memory given up)");
	vcpu_close(&r->vcpu);
	kvm_close(&r->kvm);
	test_hooks_phase("VM closed");
	if (r->gm) {
		signals_set_fault_wipe(NULL, NULL);
		uint64_t wiped = gm_destroy(r->gm);
		r->gm = NULL;
		outcome_verbose(&r->out, "guest memory wiped: %llu KiB resident",
				(unsigned long long)(wiped >> 10));
	}
}

int main(int argc, char **argv)
{
	reserve_std_fds();
	test_hooks_init();
	struct fail f = { 0 };
	struct options o;
	enum opt_result pr = options_parse(argc, argv, &o, &f, stdout);
	if (pr == OPT_EXIT_OK)
		return 0;
	if (pr == OPT_ERROR) {
		fprintf(stderr, "cloak: %s\n", f.msg);
		return f.status;
	}
	if (o.check)
		return check_run(&o);
	/* Another process of the same user must not ptrace us or read our
	 * memory through /proc, and no core dump may hold guest memory. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	struct session s;
	memset(&s, 0, sizeof s);
	s.r.kvm.kvm_fd = s.r.kvm.vm_fd = s.r.vcpu.fd = -1;
	s.dev.dump_fd = -1;
	s.link.pid = s.link.pidfd = s.link.maps_fd = -1;
	s.r.out = (struct outcome){ .verbose = o.verbose, .quiet = o.quiet };
	s.dev.out = s.r.out;
	test_hooks_phase("options parsed");
	int status = signals_init(&f);
	test_hooks_phase("signal handlers");
	if (status == 0)
		status = run(&s, &o, &f);
	if (status < 0) {
		fprintf(stderr, "cloak: %s\n", f.msg);
		status = f.status;
	}
	finish(&s);
	test_hooks_phase("guest memory bookkeeping freed");
	test_hooks_phases_print();
	return status;
}

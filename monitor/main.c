/* SPDX-License-Identifier: ISC */
/*
 * cloak: boots a 64-bit ELF guest in a one-vCPU KVM VM whose memory the
 * guest can protect from the host. main() only sequences the modules and
 * guarantees guest memory is wiped on every exit path.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit/dump_shared.h"
#include "check/check.h"
#include "cli/options.h"
#include "devices/console.h"
#include "devices/registry.h"
#include "image/boot.h"
#include "image/elf_load.h"
#include "kvm/run.h"
#include "mem/select.h"
#include "process/sandbox.h"
#include "process/signals.h"
#include "process/split.h"
#include "test_hooks.h"
#include "x86/cpu.h"
#include "x86/pagetable.h"
#include "x86/vcpu_wipe.h"

/* What main() holds from set-up to the end, to release it on any path. */
struct session {
	struct vm vm;
	int dump_fd;
	const char *dump_path;
	uint64_t dev_caps; /* the devices' CLOAK_CAP_* bits, for the boot info */
	struct split split; /* the device process, unless --no-device-isolation */
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

/* Reads the whole guest image; refuses anything but a regular file
 * without blocking on it (a FIFO is refused, not waited on). */
static void *read_image(const char *path, size_t *len, struct fail *f)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0) {
		fail_set(f, CLOAK_EXIT_BADIMAGE, "cannot open guest %s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		fail_set(f, CLOAK_EXIT_BADIMAGE, "guest %s is not a regular file", path);
		close(fd);
		return NULL;
	}
	if ((uint64_t)st.st_size > CLOAK_IMAGE_FILE_MAX) {
		fail_set(f, CLOAK_EXIT_BADIMAGE, "guest %s is %lld bytes, larger than the %llu MiB "
			 "cloak loads", path, (long long)st.st_size, CLOAK_IMAGE_FILE_MAX >> 20);
		close(fd);
		return NULL;
	}
	size_t n = (size_t)st.st_size, done = 0;
	unsigned char *buf = malloc(n ? n : 1);
	while (buf && done < n) {
		ssize_t r = read(fd, buf + done, n - done);
		if (r <= 0)
			break;
		done += (size_t)r;
	}
	close(fd);
	if (!buf || done != n) {
		fail_set(f, CLOAK_EXIT_BADIMAGE, "cannot read guest %s", path);
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}

/* The memory backend: the one asked for, or the strongest that runs. */
static int choose_backend(struct vm *vm, const struct options *o, enum gm_backend *b,
			  struct fail *f)
{
	*b = o->backend;
	if (!o->backend_auto)
		return 0;
	struct gm_host h;
	gm_host_probe_for_choice(vm->kvm.vm_fd, &h);
	return gm_select(&h, b, f);
}

static int load(struct session *s, const struct options *o, const void *image, size_t len,
		struct elf_image *img, struct fail *f)
{
	struct vm *vm = &s->vm;
	if (kvm_open(&vm->kvm, f))
		return -1;
	test_hooks_phase("KVM open");
	/* Asked now, answered while devices, memory and the image are set up
	 * (kvm/cpuid_query.h). */
	cpuid_query_start(&vm->kvm.cpuid, vm->kvm.kvm_fd);
	if (vm->verbose) {
		char line[200];
		kvm_describe(&vm->kvm, line, sizeof line);
		vm_verbose(vm, "host: %s", line);
	}
	if (devices_setup(&vm->dev, o, f))
		return -1;
	test_hooks_phase("devices set up");
	if (o->dump_shared) {
		s->dump_fd = dump_shared_open(o->dump_shared, f);
		if (s->dump_fd < 0)
			return -1;
		s->dump_path = o->dump_shared;
	}
	enum gm_backend backend;
	if (choose_backend(vm, o, &backend, f))
		return -1;
	vm->gm = gm_create(backend, o->mem, vm->kvm.vm_fd, f);
	if (!vm->gm)
		return -1;
	gm_set_log(vm->gm, o->verbose);
	test_hooks_phase("guest memory created");
	vm_verbose(vm, "guest memory: %s%s: %s", gm_backend_name(backend),
		   o->backend_auto ? " (chosen for this host)" : "", gm_describe(vm->gm));
	if (elf_load(vm->gm, image, len, img, f)) {
		fail_prefix(f, o->guest);
		return -1;
	}
	test_hooks_phase("image loaded");
	s->dev_caps = devices_caps(vm->dev);
	/* The device process leaves now: after the devices, memory and image
	 * are set up, before the vCPU exists (process/split.h). */
	if (o->device_process && split_start(&s->split, vm, &s->dump_fd, s->dump_path, f))
		return -1;
	vm->split = o->device_process;
	struct pt_range ranges[ELF_LOAD_MAX_PHDRS];
	for (unsigned i = 0; i < img->nseg; i++)
		ranges[i] = (struct pt_range){ img->seg[i].start, img->seg[i].end,
					       img->seg[i].write, img->seg[i].exec };
	int r = vm_setup(vm, img->entry, ranges, img->nseg, f);
	test_hooks_phase("vCPU set up");
	return r;
}

static int boot(struct session *s, const struct options *o, const struct elf_image *img,
		struct fail *f)
{
	struct vm *vm = &s->vm;
	/* argv[0] is the guest's file name, then the user's arguments. */
	char *argv[CLOAK_ARGC_MAX];
	if (o->guest_argc + 1 > CLOAK_ARGC_MAX)
		return fail_set(f, CLOAK_EXIT_USAGE, "%d guest arguments, at most %d fit",
				o->guest_argc, CLOAK_ARGC_MAX - 1);
	const char *slash = strrchr(o->guest, '/');
	argv[0] = (char *)(slash ? slash + 1 : o->guest);
	for (int i = 0; i < o->guest_argc; i++)
		argv[i + 1] = o->guest_argv[i];
	uint64_t caps = CLOAK_CAP_PROTECT | s->dev_caps |
			(cpu_host_hw_virt() ? CLOAK_CAP_NATIVE_CPU : 0);
	if (boot_write_info(vm, img->highest, caps, o->guest_argc + 1, argv, f))
		return -1;
	console_init();
	signals_set_run(vm->run);
	if (signals_arm_watchdog(o->timeout_ms, f))
		return -1;
	vm_verbose(vm, "guest %s: entry 0x%llx, image [0x%llx, 0x%llx), %llu MiB, TSC %llu kHz",
		   o->guest, (unsigned long long)img->entry, (unsigned long long)img->lowest,
		   (unsigned long long)img->highest, (unsigned long long)(o->mem >> 20),
		   (unsigned long long)vm->tsc_khz);
	test_hooks_phase("boot info, console, watchdog");
	if (o->no_sandbox)
		vm_verbose(vm, "--no-sandbox: running without the seccomp filter");
	else if (vm->split ? sandbox_enter_runner(f) : sandbox_enter(f))
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
	void *image = read_image(o->guest, &len, f);
	if (!image)
		return -1;
	/* A bad image is reported as such whatever the host lacks. */
	struct elf_image img;
	int r = elf_check(o->mem, image, len, &img, f);
	test_hooks_phase("image read and checked");
	if (r)
		fail_prefix(f, o->guest);
	else
		r = load(s, o, image, len, &img, f);
	free(image);
	if (r || boot(s, o, &img, f))
		return -1;
	int status = vm_run(&s->vm);
	test_hooks_phase("guest run (KVM_RUN to its exit)");
	if (!s->vm.split) /* else the device process counts them */
		vm_count_calls(&s->vm);
	return status;
}

/* Releases everything; guest memory is wiped before it goes back. */
static void finish(struct session *s)
{
	struct vm *vm = &s->vm;
	if (s->dump_fd >= 0) {
		uint64_t pages = vm->gm ? dump_shared_write(s->dump_fd, s->dump_path, vm->gm) : 0;
		if (!vm->gm)
			close(s->dump_fd);
		vm_verbose(vm, "dumped %llu shared pages to %s", (unsigned long long)pages,
			   s->dump_path);
	}
	devices_finish(vm->dev);
	vm->dev = NULL;
	/* The device process dumps and closes its devices first: the wipe
	 * comes after it is gone. */
	split_end(&s->split);
	test_hooks_phase("devices closed");
	if (vm->gm && gm_gave_up(vm->gm)) {
		/* The private pages are no longer the monitor's to reach: the
		 * guest's own vCPU zeroes them before KVM lets them go. */
		struct fail wf = { 0 };
		int64_t z = vcpu_wipe(vm, &wf);
		if (z < 0)
			fprintf(stderr, "cloak: %s: the %llu MiB of guest memory this monitor gave "
				"up go back to the kernel unwiped\n", wf.msg,
				(unsigned long long)(gm_size(vm->gm) >> 20));
		else
			vm_verbose(vm, "guest memory zeroed by the vCPU: %llu MiB",
				   (unsigned long long)((uint64_t)z >> 20));
	}
	/* The VM goes first: once KVM holds no memslot on guest memory,
	 * unmapping it has no shadow mappings to zap and flush (measured:
	 * about half the unmap on hosts whose KVM emulates guest code). The
	 * wipe still comes before the memory goes back to the kernel. A stop
	 * request from now on has no run structure to mark. */
	signals_set_run(NULL);
	test_hooks_phase("vCPU wipe (memory given up)");
	vm_close(vm);
	test_hooks_phase("VM closed");
	if (vm->gm) {
		uint64_t wiped = gm_destroy(vm->gm);
		vm->gm = NULL;
		vm_verbose(vm, "guest memory wiped: %llu KiB resident", (unsigned long long)(wiped >> 10));
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
	s.vm.kvm.kvm_fd = s.vm.kvm.vm_fd = s.vm.vcpu_fd = -1;
	s.dump_fd = -1;
	s.split.pid = s.split.pidfd = s.split.maps_fd = -1;
	s.vm.verbose = o.verbose;
	s.vm.no_sandbox = o.no_sandbox;
	s.vm.quiet = o.quiet;
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

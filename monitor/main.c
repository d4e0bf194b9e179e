/*
 * cloak: boots a 64-bit ELF guest in a one-vCPU KVM VM whose memory the
 * guest can protect from the host. main() only sequences the modules and
 * guarantees guest memory is wiped on every exit path.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "boot.h"
#include "cloak/abi.h"
#include "devices.h"
#include "elf_load.h"
#include "hostcheck.h"
#include "options.h"
#include "pagetable.h"
#include "sandbox.h"
#include "vm.h"
#include "watchdog.h"

#define IMAGE_MAX (256ull << 20)

static void die_line(const char *msg)
{
	fprintf(stderr, "cloak: %s\n", msg);
}

/* Reads the whole guest image; one-line error on failure. */
static void *read_image(const char *path, size_t *len, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0) {
		snprintf(err, errlen, "cannot open guest %s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "guest %s is not a regular file", path);
		close(fd);
		return NULL;
	}
	if ((uint64_t)st.st_size > IMAGE_MAX) {
		snprintf(err, errlen, "guest %s is %lld bytes, larger than the %llu MiB "
			 "cloak loads", path, (long long)st.st_size, IMAGE_MAX >> 20);
		close(fd);
		return NULL;
	}
	size_t n = (size_t)st.st_size;
	unsigned char *buf = malloc(n ? n : 1);
	size_t done = 0;
	while (buf && done < n) {
		ssize_t r = read(fd, buf + done, n - done);
		if (r <= 0)
			break;
		done += (size_t)r;
	}
	close(fd);
	if (!buf || done != n) {
		snprintf(err, errlen, "cannot read guest %s", path);
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}

static int boot_and_run(struct vm *vm, const struct options *o, char *err, size_t errlen)
{
	int status;
	size_t len = 0;
	void *image = read_image(o->guest, &len, err, errlen);
	if (!image)
		return CLOAK_EXIT_BADIMAGE;
	/* A bad image is reported as such whatever the host lacks. */
	struct elf_image img;
	char why[400];
	if (elf_check(o->mem, image, len, &img, why, sizeof why)) {
		free(image);
		snprintf(err, errlen, "%s: %s", o->guest, why);
		return CLOAK_EXIT_BADIMAGE;
	}
	if (vm_open(vm, err, errlen, &status)) {
		free(image);
		return status;
	}
	vm->gm = gm_create(o->backend, o->mem, vm->vm_fd, err, errlen, &status);
	if (!vm->gm) {
		free(image);
		return status;
	}
	gm_set_log(vm->gm, o->verbose);
	vm_verbose(vm, "guest memory: %s", gm_describe(vm->gm));
	int r = elf_load(vm->gm, image, len, &img, why, sizeof why);
	free(image);
	if (r) {
		snprintf(err, errlen, "%s: %s", o->guest, why);
		return CLOAK_EXIT_BADIMAGE;
	}
	struct pt_range ranges[ELF_LOAD_MAX_PHDRS];
	for (unsigned i = 0; i < img.nseg; i++)
		ranges[i] = (struct pt_range){ img.seg[i].start, img.seg[i].end, img.seg[i].write,
					       img.seg[i].exec };
	if (vm_setup(vm, img.entry, ranges, img.nseg, err, errlen, &status))
		return status;
	/* argv[0] is the guest's file name, then the user's arguments. */
	char *argv[CLOAK_ARGC_MAX + 1];
	if (o->guest_argc + 1 > CLOAK_ARGC_MAX) {
		snprintf(err, errlen, "%d guest arguments, at most %d fit", o->guest_argc,
			 CLOAK_ARGC_MAX - 1);
		return CLOAK_EXIT_USAGE;
	}
	const char *slash = strrchr(o->guest, '/');
	argv[0] = (char *)(slash ? slash + 1 : o->guest);
	for (int i = 0; i < o->guest_argc; i++)
		argv[i + 1] = o->guest_argv[i];
	if (devices_setup(vm, o, err, errlen, &status))
		return status;
	if (boot_write_info(vm, img.highest, CLOAK_CAP_PROTECT | devices_caps(vm),
			    o->guest_argc + 1, argv, err, errlen))
		return CLOAK_EXIT_USAGE;
	if (watchdog_init(vm->run) || watchdog_arm(o->timeout_ms)) {
		snprintf(err, errlen, "cannot set up the watchdog: %s", strerror(errno));
		return CLOAK_EXIT_INTERNAL;
	}
	vm_verbose(vm, "guest %s: entry 0x%llx, image [0x%llx, 0x%llx), %llu MiB %s memory, "
		   "TSC %llu kHz", o->guest, (unsigned long long)img.entry,
		   (unsigned long long)img.lowest, (unsigned long long)img.highest,
		   (unsigned long long)(o->mem >> 20), gm_backend_name(o->backend),
		   (unsigned long long)vm->tsc_khz);
	if (o->no_sandbox)
		vm_verbose(vm, "--no-sandbox: running without the seccomp filter");
	else if (sandbox_enter(err, errlen))
		return CLOAK_EXIT_INTERNAL;
	status = vm_run(vm);
	if (vm->verbose) {
		uint64_t total = 0;
		for (unsigned i = 0; i < CLOAK_HC_MAX; i++)
			total += vm->hc_calls[i];
		vm_verbose(vm, "%llu calls, %llu refused, %llu guest-memory accesses refused",
			   (unsigned long long)total, (unsigned long long)vm->hc_refused,
			   (unsigned long long)gm_refused(vm->gm));
	}
	return status;
}

int main(int argc, char **argv)
{
	char err[512] = "";
	struct options o;
	enum opt_result pr = options_parse(argc, argv, &o, err, sizeof err, stdout);
	if (pr == OPT_EXIT_OK)
		return 0;
	if (pr == OPT_ERROR) {
		die_line(err);
		return CLOAK_EXIT_USAGE;
	}
	if (o.check)
		return hostcheck_run(&o);

	/* Another process of the same user must not ptrace us or read our
	 * memory through /proc, and no core dump may hold guest memory. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	/* A closed stdout or channel peer must be an error the guest sees, not
	 * a SIGPIPE that kills the monitor before it wipes guest memory. */
	signal(SIGPIPE, SIG_IGN);

	struct vm vm;
	memset(&vm, 0, sizeof vm);
	vm.kvm_fd = vm.vm_fd = vm.vcpu_fd = -1;
	vm.verbose = o.verbose;
	vm.quiet = o.quiet;
	if (o.verbose)
		hostcheck_report_brief(o.backend);
	int status = boot_and_run(&vm, &o, err, sizeof err);
	if (err[0])
		die_line(err);
	devices_finish(&vm, o.dump_shared); /* before the wipe: --dump-shared */
	/* Wipes guest memory before it returns to the kernel. */
	uint64_t wiped = gm_destroy(vm.gm);
	if (vm.gm)
		vm_verbose(&vm, "guest memory wiped: %llu KiB resident", (unsigned long long)(wiped >> 10));
	vm_close(&vm);
	return status;
}

/* SPDX-License-Identifier: ISC */
/* KVM probe for `cloak check`; see probe_kvm.h. */
#include "probe_kvm.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cloak/abi.h"
#include "kvm/kvm_compat.h"
#include "kvm/vcpu.h"
#include "mem/give_up.h"
#include "x86/cpu.h"
#include "x86/pagetable.h"

#define KVM_PROBE_MEM (4ull << 20)
#define CODE_GPA CLOAK_GPA_GUEST_MIN
#define DATA_GPA 0x200000ull
#define PROBE_PORT 0xe9
#define MARK 0x5c
#define WRITTEN 0x99

/* Long mode, entered the way the monitor enters guests (vm_setup):
 *   mov al, [0x200000]; out 0xe9, al; mov byte [0x200001], 0x99; hlt
 * The guest reads a byte the host put in guest memory and writes one back,
 * so both directions through that memory are seen. */
static const unsigned char guest_code[] = {
	0x8a, 0x04, 0x25, 0x00, 0x00, 0x20, 0x00,
	0xe6, PROBE_PORT,
	0xc6, 0x04, 0x25, 0x01, 0x00, 0x20, 0x00, WRITTEN,
	0xf4,
};

struct kvm_outcome {
	int ok;          /* 1: the guest read the marker, wrote back and halted */
	int gave_up;     /* the monitor gave guest memory up (gm_protect) first */
	char what[200];  /* what happened, one line */
};

static const char *exit_name(unsigned reason)
{
	switch (reason) {
	case KVM_EXIT_IO: return "KVM_EXIT_IO";
	case KVM_EXIT_HLT: return "KVM_EXIT_HLT";
	case KVM_EXIT_MMIO: return "KVM_EXIT_MMIO";
	case KVM_EXIT_SHUTDOWN: return "KVM_EXIT_SHUTDOWN";
	case KVM_EXIT_INTERNAL_ERROR: return "KVM_EXIT_INTERNAL_ERROR";
	case KVM_EXIT_FAIL_ENTRY: return "KVM_EXIT_FAIL_ENTRY";
	case KVM_EXIT_MEMORY_FAULT: return "KVM_EXIT_MEMORY_FAULT";
	default: return "another exit";
	}
}

/* One pass of the guest from its entry point; the caller checks the byte
 * written back (it cannot while the mapping is PROT_NONE). */
static void run_once(struct vcpu *v, struct kvm_outcome *out)
{
	memset(out, 0, sizeof *out);
	cpu_restart_at(v->fd, CODE_GPA);
	int saw_marker = 0;
	for (int step = 0; step < 4; step++) {
		if (ioctl(v->fd, KVM_RUN, 0) < 0) {
			snprintf(out->what, sizeof out->what, "KVM_RUN failed: %s%s", strerror(errno),
				 errno == EFAULT ? " (KVM cannot fault this memory in: GUP refuses it)"
						 : "");
			return;
		}
		struct kvm_run *run = v->run;
		if (run->exit_reason == KVM_EXIT_IO && run->io.port == PROBE_PORT &&
		    run->io.direction == KVM_EXIT_IO_OUT && run->io.size == 1) {
			unsigned char b = *((const unsigned char *)run + run->io.data_offset);
			saw_marker = b == MARK;
			if (!saw_marker) {
				snprintf(out->what, sizeof out->what, "the guest read 0x%02x, not the "
					 "marker 0x%02x, from guest memory", b, MARK);
				return;
			}
			continue;
		}
		if (run->exit_reason == KVM_EXIT_HLT && saw_marker) {
			out->ok = 1;
			snprintf(out->what, sizeof out->what, "a long-mode guest read the marker "
				 "from this memory (KVM_EXIT_IO) and halted (KVM_EXIT_HLT)");
			return;
		}
		snprintf(out->what, sizeof out->what, "KVM_RUN ended in %s (%u)%s",
			 exit_name(run->exit_reason), run->exit_reason,
			 run->exit_reason == KVM_EXIT_INTERNAL_ERROR ? ": KVM could not read "
			 "guest memory" : "");
		return;
	}
	snprintf(out->what, sizeof out->what, "the guest did not halt");
}

/* The child: sets up a VM exactly like the monitor and runs the guest
 * twice, the second time with the monitor's mapping made PROT_NONE. */
static void child(enum gm_backend backend, int fd)
{
	struct kvm_outcome first = { 0 }, second = { 0 };
	struct kvm_host kvm;
	struct vcpu v = { .fd = -1 };
	struct guestmem *gm = NULL;
	struct fail f = { 0 };
	alarm(10);
	if (kvm_open(&kvm, &f) == 0)
		gm = gm_create(backend, KVM_PROBE_MEM, kvm.vm_fd, &f);
	unsigned char mark = MARK;
	if (gm && (gm_copy_to(gm, gpa(CODE_GPA), guest_code, sizeof guest_code) != GM_OK ||
		      gm_copy_to(gm, gpa(DATA_GPA), &mark, 1) != GM_OK))
		fail_set(&f, CLOAK_EXIT_INTERNAL, "cannot write the probe guest into memory");
	else if (gm) {
		/* One page of code, one of data, like an image's segments. */
		static const struct pt_range probe_image[] = {
			{ CODE_GPA, CODE_GPA + 0x1000, false, true },
			{ DATA_GPA & ~0xfffull, (DATA_GPA & ~0xfffull) + 0x1000, true, false },
		};
		vcpu_setup(&v, &kvm, gm, CODE_GPA, probe_image, 2, &f);
	}
	if (f.status) {
		snprintf(first.what, sizeof first.what, "%.190s", f.msg);
		if (write(fd, &first, sizeof first) < 0)
			_exit(1);
		_exit(0);
	}
	run_once(&v, &first);
	unsigned char back = 0;
	if (first.ok && (gm_copy_from(gm, &back, gpa(DATA_GPA + 1), 1) != GM_OK ||
			 back != WRITTEN)) {
		first.ok = 0;
		snprintf(first.what, sizeof first.what, "the guest halted but its write did "
			 "not reach the memory (read back 0x%02x)", back);
	}
	if (write(fd, &first, sizeof first) != (ssize_t)sizeof first || !first.ok)
		_exit(0);
	/* Does KVM still run the guest once the monitor gives up its mapping?
	 * Where the backend gives memory up at PROTECT, that is the real path:
	 * nothing is shared, so every page of code and data leaves the
	 * monitor. Elsewhere the mapping is made PROT_NONE to see whether KVM
	 * would need it. */
	struct gm_slot slot;
	gm_slot(gm, &slot);
	unsigned char zero = 0;
	gm_copy_to(gm, gpa(DATA_GPA + 1), &zero, 1);
	gm_protect(gm);
	if (gm_gave_up(gm)) {
		run_once(&v, &second);
		second.gave_up = 1;
	} else if (mprotect((void *)(uintptr_t)slot.userspace_addr, slot.size, PROT_NONE) != 0) {
		snprintf(second.what, sizeof second.what, "mprotect(PROT_NONE) failed: %s",
			 strerror(errno));
	} else {
		run_once(&v, &second);
		mprotect((void *)(uintptr_t)slot.userspace_addr, slot.size, PROT_READ | PROT_WRITE);
	}
	if (write(fd, &second, sizeof second) < 0)
		_exit(1);
	gm_destroy(gm);
	vcpu_close(&v);
	kvm_close(&kvm);
	_exit(0);
}

void probe_kvm_run(enum gm_backend backend, struct row_result *run, struct row_result *hidden)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC)) {
		run->v = PV_UNKNOWN;
		snprintf(run->how, sizeof run->how, "pipe: %s", strerror(errno));
		return;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		child(backend, p[1]);
	}
	close(p[1]);
	struct kvm_outcome first, second;
	ssize_t n1 = pid > 0 ? read(p[0], &first, sizeof first) : -1;
	ssize_t n2 = n1 == (ssize_t)sizeof first ? read(p[0], &second, sizeof second) : -1;
	close(p[0]);
	int ws = 0;
	if (pid > 0)
		waitpid(pid, &ws, 0);
	bool killed = pid > 0 && WIFSIGNALED(ws);
	if (n1 != (ssize_t)sizeof first) {
		run->v = PV_UNKNOWN;
		snprintf(run->how, sizeof run->how, "the probe %s",
			 killed ? "did not finish in 10 s (KVM_RUN wedged?)" : "failed to start");
		return;
	}
	run->v = first.ok ? PV_YES : PV_NO;
	snprintf(run->how, sizeof run->how, "%s", first.what);
	if (!first.ok)
		return;
	const char *mapped = hidden->how[0] ? hidden->how : "the monitor maps guest RAM";
	char prefix[200];
	snprintf(prefix, sizeof prefix, "%.190s", mapped);
	if (n2 != (ssize_t)sizeof second) {
		snprintf(hidden->how, sizeof hidden->how, "%.190s; with that mapping PROT_NONE "
			 "the guest %s", prefix, killed ? "hung (probe killed after 10 s)"
							: "could not be run");
		hidden->v = PV_NO;
	} else if (second.gave_up) {
		if (second.ok)
			snprintf(hidden->how, sizeof hidden->how, "the monitor gave guest memory up "
				 "(every private page unmapped, its descriptor closed) and KVM still "
				 "ran the guest from it: %.150s", second.what);
		else
			snprintf(hidden->how, sizeof hidden->how, "the monitor gave guest memory up "
				 "but KVM could not run the guest then: %.150s", second.what);
		hidden->v = second.ok ? PV_YES : PV_NO;
	} else if (second.ok) {
		/* KVM ran this probe guest without the mapping; for a guest_memfd
		 * the monitor keeps it only for the reason the backend gives. */
		char why[200] = "";
		if (backend == GM_BACKEND_GMEM && !give_up_possible(why, sizeof why))
			snprintf(hidden->how, sizeof hidden->how, "%.100s; KVM ran the probe guest "
				 "with that mapping PROT_NONE, but the monitor keeps it: %.120s",
				 prefix, why);
		else
			snprintf(hidden->how, sizeof hidden->how, "%.190s, but KVM ran the guest "
				 "with that mapping PROT_NONE: the monitor could give it up", prefix);
		hidden->v = PV_NO;
	} else {
		snprintf(hidden->how, sizeof hidden->how, "%.150s; KVM here needs it: with it "
			 "PROT_NONE, %.150s", prefix, second.what);
		hidden->v = PV_NO;
	}
}

/* SPDX-License-Identifier: ISC */
/* `cloak check`'s probe of the split monitor; see probe_split.h. */
#include "probe_split.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cloak/abi.h"
#include "kvm/kvm_compat.h"
#include "mem/device_view.h"
#include "process/fd_pass.h"
#include "process/sandbox.h"
#include "runner/device_maps.h"

#define SPLIT_PROBE_MEM (1ull << 20)
#define PG CLOAK_PAGE_SIZE

/* What the probing device process tried in its sandbox: each refused? */
struct tried {
	int kvm_errno, ioctl_errno, mmap_errno;
};

static int refused(long ret)
{
	return ret < 0 ? errno : 0;
}

/* The child: the device process's steps (device/serve.c), then what a
 * compromised one would try. Reports on sock; never returns. */
static _Noreturn void device_side(struct guestmem *gm, int sock)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	int copy = dup(sock); /* fd_pass_own_maps closes its socket */
	if (copy < 0 || fd_pass_own_maps(sock) != 0)
		_exit(1);
	char go;
	if (read(copy, &go, 1) != 1)
		_exit(1);
	gm_device_adopt(gm);
	gm_device_protect(gm); /* unmaps every private page */
	struct tried t = { 0 };
	if (sandbox_enter_devices() == 0) {
		t.kvm_errno = refused(syscall(SYS_openat, AT_FDCWD, "/dev/kvm", O_RDWR));
		t.ioctl_errno = refused(ioctl(copy, KVM_GET_API_VERSION, 0));
		void *m = mmap(NULL, PG, PROT_READ, MAP_SHARED, copy, 0);
		t.mmap_errno = m == MAP_FAILED ? errno : 0;
	} else {
		t.kvm_errno = t.ioctl_errno = t.mmap_errno = -1;
	}
	if (write(copy, &t, sizeof t) != sizeof t)
		_exit(1);
	for (;;)
		pause();
}

static void judge(struct row_result *r, struct guestmem *gm, int maps_fd,
		  const struct device_maps_file *id, int sock)
{
	char why[200];
	/* Control: before PROTECT the child maps all of guest memory, and the
	 * check must see that (else it sees nothing). */
	if (device_maps_check(maps_fd, gm, id, why, sizeof why) == 0) {
		probe_set(r, PV_UNKNOWN, "the maps check found no private page even before PROTECT");
		return;
	}
	gm_protect(gm); /* the runner's own view */
	char go = 1;
	struct tried t;
	if (write(sock, &go, 1) != 1 || read(sock, &t, sizeof t) != sizeof t) {
		probe_set(r, PV_UNKNOWN, "the probing device process did not answer");
		return;
	}
	if (t.kvm_errno < 0) {
		probe_set(r, PV_NO, "the device process cannot enter its seccomp sandbox here");
		return;
	}
	if (device_maps_check(maps_fd, gm, id, why, sizeof why) != 0) {
		probe_set(r, PV_NO, "after PROTECT the device process still %s", why);
		return;
	}
	if (!t.kvm_errno || !t.ioctl_errno || !t.mmap_errno) {
		probe_set(r, PV_NO, "the device process's sandbox let through: /dev/kvm %s, ioctl %s, mmap "
		    "of a descriptor %s", probe_errname(t.kvm_errno), probe_errname(t.ioctl_errno),
		    probe_errname(t.mmap_errno));
		return;
	}
	probe_set(r, PV_YES, "a device process forked over this memory mapped its private pages before "
	    "PROTECT (control) and only the shared page after, as the runner read its maps; in "
	    "its sandbox /dev/kvm: %s, ioctl: %s, mmap of a descriptor: %s",
	    probe_errname(t.kvm_errno), probe_errname(t.ioctl_errno), probe_errname(t.mmap_errno));
}

void probe_devices_apart(enum gm_backend backend, int kvm_vm_fd, struct row_result *r)
{
	struct fail f = { 0 };
	struct guestmem *gm = gm_create(backend, SPLIT_PROBE_MEM, kvm_vm_fd, &f);
	if (!gm) {
		probe_set(r, PV_UNKNOWN, "could not create guest memory to probe: %.300s", f.msg);
		return;
	}
	/* One shared page, and a private one the child must not keep. */
	static const char mark[] = "cloak-check-private";
	gm_share(gm, gpa(PG), 1);
	gm_copy_to(gm, gpa(3 * PG), mark, sizeof mark);
	struct device_maps_file id;
	device_maps_identify(gm, &id);
	gm_fix_window(gm);
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
		probe_set(r, PV_UNKNOWN, "socketpair: %s", strerror(errno));
		gm_destroy(gm);
		return;
	}
	gm_inherit_on_fork(gm, true);
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		close(sv[0]);
		device_side(gm, sv[1]);
	}
	gm_inherit_on_fork(gm, false);
	close(sv[1]);
	int maps_fd = -1;
	char m;
	if (pid > 0 && fd_pass_recv(sv[0], &m, 1, &maps_fd) != 0)
		maps_fd = -1;
	if (pid < 0)
		probe_set(r, PV_UNKNOWN, "could not fork a probing device process: %s", strerror(errno));
	else if (maps_fd < 0)
		probe_set(r, PV_NO, "the device process could not pass its /proc/self/maps");
	else
		judge(r, gm, maps_fd, &id, sv[0]);
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	if (maps_fd >= 0)
		close(maps_fd);
	close(sv[0]);
	gm_destroy(gm);
}

/* SPDX-License-Identifier: ISC */
/* The fork of the device process; see spawn.h. */
#include "spawn.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "device/serve.h"
#include "process/fd_pass.h"

/* The hand-off page, made before the fork so both sides inherit it
 * (handoff/handoff.h), its eventfd, the first token and whether spinning
 * pays. */
static int handoff_create(struct handoff *h, struct fail *f)
{
	memset(h, 0, sizeof *h);
	int mfd = memfd_create("cloak-handoff", MFD_CLOEXEC);
	if (mfd < 0 || ftruncate(mfd, 4096) != 0) {
		if (mfd >= 0)
			close(mfd);
		return fail_set(f, CLOAK_EXIT_INTERNAL, "cannot create the hand-off page: %s",
				strerror(errno));
	}
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	close(mfd);
	if (p == MAP_FAILED)
		return fail_set(f, CLOAK_EXIT_INTERNAL, "cannot map the hand-off page: %s",
				strerror(errno));
	h->page = p;
	h->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (h->wake_fd < 0)
		return fail_set(f, CLOAK_EXIT_INTERNAL, "eventfd: %s", strerror(errno));
	if (getrandom(&h->token_state, sizeof h->token_state, 0) != sizeof h->token_state)
		h->token_state = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull;
	h->token_state |= 1; /* xorshift's one forbidden state is 0 */
	cpu_set_t cpus;
	h->spin = sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) > 1;
	return 0;
}

static void kill_child(struct device_link *l)
{
	kill(l->pid, SIGKILL);
	waitpid(l->pid, NULL, 0);
	l->pid = -1;
}

int spawn_device(struct device_link *l, struct device *d, const int *kvm_fds, unsigned n,
		 bool no_sandbox, struct fail *f)
{
	memset(l, 0, sizeof *l);
	l->pid = l->pidfd = l->maps_fd = -1;
	if (handoff_create(&l->h, f))
		return -1;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
		return fail_set(f, CLOAK_EXIT_INTERNAL, "cannot make a socket pair: %s",
				strerror(errno));
	device_maps_identify(d->gm, &l->guest);
	gm_fix_window(d->gm);
	gm_inherit_on_fork(d->gm, true);
	pid_t runner = getpid();
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		close(sv[0]);
		for (unsigned i = 0; i < n; i++)
			if (kvm_fds[i] >= 0)
				close(kvm_fds[i]);
		device_serve(d, &l->h, runner, sv[1], no_sandbox);
	}
	int fork_errno = errno;
	gm_inherit_on_fork(d->gm, false);
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		return fail_set(f, CLOAK_EXIT_INTERNAL, "cannot fork the device process: %s",
				strerror(fork_errno));
	}
	l->pid = pid;
	char m;
	if (fd_pass_recv(sv[0], &m, 1, &l->maps_fd) != 0)
		l->maps_fd = -1;
	close(sv[0]);
	if (l->maps_fd < 0) {
		kill_child(l);
		return fail_set(f, CLOAK_EXIT_INTERNAL, "the device process could not open its "
				"/proc/self/maps for the runner (is /proc mounted?)");
	}
	l->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (l->pidfd < 0 && !no_sandbox) {
		kill_child(l);
		return fail_set(f, CLOAK_EXIT_NOHOST, "pidfd_open: %s (needs Linux 5.3+)",
				strerror(errno));
	}
	/* The devices and the dump file are the device process's now. */
	if (d->dev) {
		d->dev->verbose = false;
		devices_finish(d->dev);
		d->dev = NULL;
	}
	if (d->dump_fd >= 0)
		close(d->dump_fd);
	d->dump_fd = -1;
	return 0;
}

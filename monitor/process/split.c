/* SPDX-License-Identifier: ISC */
/* The vCPU runner and the device process; see split.h. */
#include "split.h"

#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "audit/dump_shared.h"
#include "calls/dispatch.h"
#include "devices/console.h"
#include "devices/registry.h"
#include "kvm/vm.h"
#include "sandbox.h"
#include "signals.h"
#include "test_hooks.h"

enum split_op { SPLIT_CALL = 1, SPLIT_FINISH = 2 };
enum split_verdict { SPLIT_RESUME = 1, SPLIT_END = 2 };

/* The one page both processes map. Each side writes only its own half
 * and publishes it by storing the sequence number last (release); the
 * other side loads the number first (acquire), then copies the fields
 * once. The runner trusts nothing in the reply but what it checks. */
struct split_slot {
	_Atomic uint32_t req_seq; /* runner: the request's number, 1, 2, ... */
	uint32_t op;              /* enum split_op */
	uint32_t port, size, value; /* the exit: an outl of value to port */
	uint64_t req_token;       /* unpredictable until the request is made */
	_Atomic uint32_t rep_sleeping; /* runner: in FUTEX_WAIT on rep_seq */
	unsigned char pad_[28];   /* each half on its own cache line */
	_Atomic uint32_t rep_seq; /* device: the request it answers */
	uint32_t verdict;         /* enum split_verdict */
	int32_t status;           /* SPLIT_END: the VM's exit status */
	_Atomic uint32_t req_sleeping; /* device: in FUTEX_WAIT on req_seq */
	uint64_t rep_token;       /* the request's, echoed */
};
_Static_assert(sizeof(struct split_slot) <= 4096, "one page");

/* The runner waits for a reply in slices this long, to notice a device
 * process that died (nothing else wakes it then). */
#define SPLIT_SLICE_NS 50000000ll
/* How long the runner lets the device process finish (dump, close). */
#define SPLIT_FINISH_MS 5000

static struct split *the_split; /* the runner's, for split_call */
static uint64_t token_state;    /* xorshift64, seeded from getrandom */

/* Each request's token: a reply made before its request was (to a request
 * never made) cannot echo it. Not a secret from the device process, which
 * reads it with the request. */
static uint64_t next_token(void)
{
	token_state ^= token_state << 13;
	token_state ^= token_state >> 7;
	token_state ^= token_state << 17;
	return token_state;
}

static int signal_device(const struct split *sp, int sig)
{
	/* Through the pidfd: the runner's sandbox allows no kill(), so it
	 * can signal no process but this one. Without a pidfd (valgrind
	 * knows no pidfd_open; it runs without the sandbox) kill() does. */
	if (sp->pidfd < 0)
		return kill(sp->pid, sig);
	return (int)syscall(SYS_pidfd_send_signal, sp->pidfd, sig, NULL, 0);
}

static long futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
	/* Not FUTEX_PRIVATE_FLAG: the word is in memory two processes share. */
	return syscall(SYS_futex, (uint32_t *)addr, op, val, ts, NULL, 0);
}

/* With more than one CPU, each side spins this long on the other's
 * sequence number before it sleeps in the futex, and a side that did not
 * sleep is not woken: a hand-off is then a cache line each way, not two
 * wake-ups (in the SVM tier's VM with two vCPUs the null call went from
 * 2.45x to 1.43x one process; docs/design.md). With one CPU, spinning only
 * delays the other side, so neither spins. */
#define SPLIT_SPIN_NS 200000l
static bool spin_pays;

static bool spun_until_changed(_Atomic uint32_t *word, uint32_t old)
{
	if (!spin_pays)
		return false;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned i = 1;; i++) {
		if (atomic_load_explicit(word, memory_order_acquire) != old)
			return true;
		__builtin_ia32_pause();
		if (i % 64 == 0) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			if ((t.tv_sec - t0.tv_sec) * 1000000000l + t.tv_nsec - t0.tv_nsec > SPLIT_SPIN_NS)
				return false;
		}
	}
}

/* The sleeping side: flag, look again, sleep (Dekker with publish() below:
 * under sequential consistency either it sees the new number or the other
 * side sees the flag and wakes it). 0, or the futex's error. */
static long sleep_on(_Atomic uint32_t *word, _Atomic uint32_t *sleeping, uint32_t old,
		     const struct timespec *ts)
{
	atomic_store(sleeping, 1);
	long r = 0;
	if (atomic_load(word) == old)
		r = futex(word, FUTEX_WAIT, old, ts);
	atomic_store(sleeping, 0);
	return r;
}

static void publish(_Atomic uint32_t *word, _Atomic uint32_t *sleeping, uint32_t seq)
{
	atomic_store(word, seq);
	if (atomic_load(sleeping))
		futex(word, FUTEX_WAKE, 1, NULL);
}

static bool stop_requested(void)
{
	return signals_watchdog_fired() || signals_stop_signal() != 0;
}

/* ---- the device process ---- */

static void reply(struct split_slot *s, uint32_t seq, uint64_t token, uint32_t verdict,
		  int32_t status)
{
	uint32_t extra = test_hooks_device_reply(&seq, &verdict, &status);
	s->verdict = verdict;
	s->status = status;
	s->rep_token = token;
	publish(&s->rep_seq, &s->rep_sleeping, seq);
	if (extra) { /* a test hook's reply to a request not made yet; then
		      * this process answers nothing more */
		atomic_store_explicit(&s->rep_seq, extra, memory_order_release);
		futex(&s->rep_seq, FUTEX_WAKE, 1, NULL);
		for (;;)
			futex(&s->rep_seq, FUTEX_WAIT, extra, NULL);
	}
}

static _Noreturn void device_finish(struct vm *vm, int dump_fd, const char *dump_path)
{
	vm_count_calls(vm);
	if (dump_fd >= 0) {
		uint64_t pages = dump_shared_write(dump_fd, dump_path, vm->gm);
		vm_verbose(vm, "dumped %llu shared pages to %s", (unsigned long long)pages,
			   dump_path);
	}
	devices_finish(vm->dev);
	fflush(NULL);
	_exit(0);
}

/* The child's side of the fork: nothing of KVM's, no descriptor of guest
 * memory, dies with the runner. */
static void device_enter(struct vm *vm, pid_t runner, int maps_sock, struct fail *f)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid() != runner)
		_exit(CLOAK_EXIT_DEVICE);
	/* Opened first, while this is still the monitor's own code; the
	 * runner cannot open it (neither process is dumpable). */
	if (device_maps_send(maps_sock) != 0)
		_exit(CLOAK_EXIT_DEVICE); /* the runner reports it */
	prctl(PR_SET_NAME, "cloak-devices", 0, 0, 0);
	int fds[] = { vm->kvm.kvm_fd, vm->kvm.vm_fd, vm->vcpu_fd };
	for (unsigned i = 0; i < sizeof fds / sizeof fds[0]; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	vm->kvm.kvm_fd = vm->kvm.vm_fd = vm->vcpu_fd = -1;
	vm->run = NULL;
	gm_become_device_side(vm->gm);
	console_init();
	test_hooks_device_enter(false);
	if (!vm->no_sandbox && sandbox_enter_devices()) {
		fprintf(stderr, "cloak: device process: cannot enter its seccomp sandbox: %s\n",
			strerror(errno));
		_exit(CLOAK_EXIT_DEVICE);
	}
	test_hooks_device_enter(true);
	(void)f;
}

static _Noreturn void device_main(struct split *sp, struct vm *vm, int dump_fd,
				  const char *dump_path)
{
	struct split_slot *s = sp->slot;
	for (;;) {
		uint32_t seq = atomic_load_explicit(&s->req_seq, memory_order_acquire);
		if (seq == sp->seq) {
			/* A stop request that lands here is answered at the
			 * next request: the runner is the one to end the VM. */
			if (!spun_until_changed(&s->req_seq, seq))
				sleep_on(&s->req_seq, &s->req_sleeping, seq, NULL);
			continue;
		}
		uint32_t op = s->op, port = s->port, size = s->size, value = s->value;
		uint64_t token = s->req_token;
		sp->seq = seq;
		if (op != SPLIT_CALL)
			device_finish(vm, dump_fd, dump_path);
		int r = hc_dispatch(vm, (uint16_t)port, size, value);
		if (r != 0 && !vm->stopped)
			vm_fail(vm, CLOAK_EXIT_INTERNAL, "call on port 0x%x failed", port);
		/* A stop request sent to this process alone (or cutting its
		 * POLL) ends the VM as one sent to the runner would. */
		int sig = signals_stop_signal();
		if (sig && !vm->stopped)
			vm_fail(vm, CLOAK_EXIT_INTERRUPTED, "interrupted by signal %d (%s), guest "
				"stopped", sig, strsignal(sig));
		reply(s, seq, token, vm->stopped ? SPLIT_END : SPLIT_RESUME, vm->exit_status);
		if (vm->stopped)
			device_finish(vm, dump_fd, dump_path);
	}
}

/* ---- the runner ---- */

int split_start(struct split *sp, struct vm *vm, int *dump_fd, const char *dump_path,
		struct fail *f)
{
	sp->pid = sp->pidfd = sp->maps_fd = -1;
	sp->seq = 0;
	int mfd = memfd_create("cloak-split", MFD_CLOEXEC);
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
	sp->slot = p;
	if (getrandom(&token_state, sizeof token_state, 0) != sizeof token_state)
		token_state = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull;
	token_state |= 1; /* xorshift's one forbidden state is 0 */
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
		return fail_set(f, CLOAK_EXIT_INTERNAL, "cannot make a socket pair: %s",
				strerror(errno));
	device_maps_identify(vm->gm, &sp->guest);
	gm_fix_window(vm->gm);
	cpu_set_t cpus;
	spin_pays = sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) > 1;
	gm_inherit_on_fork(vm->gm, true);
	pid_t runner = getpid();
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		close(sv[0]);
		device_enter(vm, runner, sv[1], f);
		device_main(sp, vm, *dump_fd, dump_path);
	}
	int fork_errno = errno;
	gm_inherit_on_fork(vm->gm, false);
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		return fail_set(f, CLOAK_EXIT_INTERNAL, "cannot fork the device process: %s",
				strerror(fork_errno));
	}
	sp->pid = pid;
	sp->maps_fd = device_maps_receive(sv[0]);
	close(sv[0]);
	if (sp->maps_fd < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		sp->pid = -1;
		return fail_set(f, CLOAK_EXIT_INTERNAL, "the device process could not open its "
				"/proc/self/maps for the runner (is /proc mounted?)");
	}
	sp->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (sp->pidfd < 0 && !vm->no_sandbox) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		sp->pid = -1;
		return fail_set(f, CLOAK_EXIT_NOHOST, "pidfd_open: %s (needs Linux 5.3+)",
				strerror(errno));
	}
	/* The devices and the dump file are the device process's now. */
	if (vm->dev) {
		vm->dev->verbose = false;
		devices_finish(vm->dev);
		vm->dev = NULL;
	}
	if (*dump_fd >= 0)
		close(*dump_fd);
	*dump_fd = -1;
	the_split = sp;
	return 0;
}

/* The runner keeps its own view of what is shared, for giving memory up
 * at PROTECT and unmapping at UNSHARE as in one process: it repeats the
 * three memory calls on its bookkeeping, reading nothing but SHARE's and
 * UNSHARE's block, and writing nothing. The guest's answer is the device
 * process's, made on its identical view. */
static bool mirror_memory_call(struct vm *vm, unsigned nr, uint32_t value)
{
	if (nr == CLOAK_HC_PROTECT) {
		gm_protect(vm->gm);
		return true;
	}
	if (nr != CLOAK_HC_SHARE && nr != CLOAK_HC_UNSHARE)
		return false;
	struct cloak_hc_share a;
	if (value % 8 || gm_copy_from(vm->gm, &a, gpa(value), sizeof a) != GM_OK)
		return false;
	if (nr == CLOAK_HC_SHARE)
		gm_share(vm->gm, gpa(a.gpa), a.npages);
	else
		gm_unshare(vm->gm, gpa(a.gpa), a.npages);
	return nr == CLOAK_HC_UNSHARE;
}

static int device_failed(struct vm *vm, const char *why)
{
	signal_device(the_split, SIGKILL);
	return vm_fail(vm, CLOAK_EXIT_DEVICE, "device process %s: guest stopped", why);
}

/* A status a device process may end the VM with: the guest's own, or one
 * a call gives (the guest broke the ABI, aborted, the call failed, or a
 * stop request reached the device process). */
static bool status_in_shape(int32_t st)
{
	return (st >= 0 && st <= CLOAK_EXIT_STATUS_MAX) || st == CLOAK_EXIT_VIOLATION ||
	       st == CLOAK_EXIT_ABORT || st == CLOAK_EXIT_INTERNAL || st == CLOAK_EXIT_INTERRUPTED;
}

int split_call(struct vm *vm, uint16_t port, unsigned size, uint32_t value)
{
	struct split *sp = the_split;
	struct split_slot *s = sp->slot;
	bool unmaps = false; /* the device process must have unmapped pages */
	if (port >= CLOAK_HC_PORT_BASE && port < CLOAK_HC_PORT_BASE + CLOAK_HC_MAX && size == 4)
		unmaps = mirror_memory_call(vm, port - CLOAK_HC_PORT_BASE, value);
	/* Nothing may have been answered since the last reply. */
	if (atomic_load_explicit(&s->rep_seq, memory_order_acquire) != sp->seq)
		return device_failed(vm, "replied to a request never made");
	uint32_t seq = sp->seq + 1;
	uint64_t token = next_token();
	s->op = SPLIT_CALL;
	s->req_token = token;
	s->port = port;
	s->size = size;
	s->value = value;
	publish(&s->req_seq, &s->req_sleeping, seq);
	sp->seq = seq;
	struct timespec slice = { 0, SPLIT_SLICE_NS };
	uint32_t got;
	spun_until_changed(&s->rep_seq, seq - 1);
	while ((got = atomic_load_explicit(&s->rep_seq, memory_order_acquire)) == seq - 1) {
		if (stop_requested()) {
			/* The call may sleep (POLL): cut it; the run loop ends
			 * the VM with the stop request's status. */
			signal_device(sp, SIGTERM);
			return 0;
		}
		if (sleep_on(&s->rep_seq, &s->rep_sleeping, seq - 1, &slice) != 0 && errno == ETIMEDOUT &&
		    waitpid(sp->pid, NULL, WNOHANG) == sp->pid) {
			sp->pid = -1;
			return vm_fail(vm, CLOAK_EXIT_DEVICE, "device process died: guest stopped");
		}
	}
	/* One copy of the reply; only the copy is judged. */
	uint32_t verdict = s->verdict;
	int32_t status = s->status;
	uint64_t echoed = s->rep_token;
	if (got != seq || echoed != token)
		return device_failed(vm, "replied out of turn");
	if (verdict == SPLIT_RESUME) {
		char why[200];
		if (unmaps && device_maps_check(sp->maps_fd, vm->gm, &sp->guest, why, sizeof why))
			return device_failed(vm, why);
		return 0;
	}
	if (verdict != SPLIT_END || !status_in_shape(status))
		return device_failed(vm, "replied out of shape");
	vm->stopped = true;
	vm->exit_status = status;
	return -1;
}

/* Waits until the device process has exited, or ms have passed. Its
 * pidfd turns readable the moment it exits, so the runner sleeps exactly
 * that long (stepped polling overshot by up to half its last step: about
 * 1 ms of an empty guest's boot in the SVM tier). Without a pidfd
 * (valgrind knows none), it looks often at first, then in 10 ms steps. */
static bool reaped(const struct split *sp, int ms)
{
	struct timespec now, end;
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += ms / 1000;
	end.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (end.tv_nsec >= 1000000000L) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
	long step = 20000; /* ns */
	for (;;) {
		pid_t r = waitpid(sp->pid, NULL, WNOHANG);
		if (r == sp->pid || (r < 0 && errno == ECHILD))
			return true;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec))
			return false;
		if (sp->pidfd >= 0) {
			/* A stop signal ends the sleep early (EINTR): look again. */
			struct timespec left = { end.tv_sec - now.tv_sec, end.tv_nsec - now.tv_nsec };
			if (left.tv_nsec < 0) {
				left.tv_sec--;
				left.tv_nsec += 1000000000L;
			}
			struct pollfd pfd = { .fd = sp->pidfd, .events = POLLIN };
			ppoll(&pfd, 1, &left, NULL);
			continue;
		}
		struct timespec tick = { 0, step };
		nanosleep(&tick, NULL);
		if (step < 10000000L)
			step *= 2;
	}
}

void split_end(struct split *sp)
{
	if (!sp)
		return;
	if (sp->pid < 0) {
		if (sp->maps_fd >= 0)
			close(sp->maps_fd);
		sp->maps_fd = -1;
		return;
	}
	struct split_slot *s = sp->slot;
	/* A device process that still waits for a request gets one to finish;
	 * one still in a call was sent SIGTERM (split_call). */
	s->op = SPLIT_FINISH;
	publish(&s->req_seq, &s->req_sleeping, sp->seq + 1);
	if (!reaped(sp, SPLIT_FINISH_MS)) {
		fprintf(stderr, "cloak: device process did not finish in %d ms: killed\n",
			SPLIT_FINISH_MS);
		signal_device(sp, SIGKILL);
		waitpid(sp->pid, NULL, 0);
	}
	if (sp->pidfd >= 0)
		close(sp->pidfd);
	if (sp->maps_fd >= 0)
		close(sp->maps_fd);
	sp->pid = sp->pidfd = sp->maps_fd = -1;
}

/* SPDX-License-Identifier: ISC */
/* Test hooks; see test_hooks.h. Built only into the test monitor. */
#include "test_hooks.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <sys/un.h>
#include <unistd.h>

#include "runner/runner.h"
#include "mem/inspect.h"

static const char *hook;
static int done;
static int maps_fd = -1;
static char *needle;
static size_t needle_len;

/* CLOAK_TEST_PHASES: each phase's name and the clock at its end. */
#define PHASES_MAX 32
static struct {
	const char *name;
	uint64_t ns;
} phases[PHASES_MAX];
static unsigned nphases;
static bool phases_on;

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

void test_hooks_phase(const char *name)
{
	if (phases_on && nphases < PHASES_MAX)
		phases[nphases++] = (typeof(phases[0])){ name, now_ns() };
	/* signal-at:PHASE, group-signal-at:PHASE: a stop request at the end
	 * of that phase, to this process alone or to its process group. */
	const char *at = hook ? strchr(hook, ':') : NULL;
	if (at && !strcmp(at + 1, name)) {
		if (!strncmp(hook, "signal-at:", 10))
			raise(SIGTERM);
		else if (!strncmp(hook, "group-signal-at:", 16))
			kill(0, SIGTERM);
	}
}

void test_hooks_phases_print(void)
{
	for (unsigned i = 1; i < nphases; i++)
		fprintf(stderr, "phase %s %.1f\n", phases[i].name,
			(double)(phases[i].ns - phases[i - 1].ns) / 1000.0);
}

void test_hooks_init(void)
{
	const char *p = getenv("CLOAK_TEST_PHASES");
	phases_on = p && strcmp(p, "1") == 0;
	hook = getenv("CLOAK_TEST_HOOK");
	test_hooks_phase("start");
	if (!hook || strcmp(hook, "selfscan"))
		return;
	/* Opened now: the sandbox forbids open later. */
	maps_fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	const char *rev = getenv("CLOAK_TEST_NEEDLE_REV");
	needle_len = rev ? strlen(rev) : 0;
	needle = malloc(needle_len + 1);
	for (size_t i = 0; needle && i < needle_len; i++)
		needle[i] = rev[needle_len - 1 - i];
}

/* Reads every readable mapping of this process with plain loads (what a
 * compromised monitor can do) and reports whether the needle is there. */
static void selfscan(void)
{
	static char maps[1 << 16];
	ssize_t n = maps_fd >= 0 ? pread(maps_fd, maps, sizeof maps - 1, 0) : -1;
	if (n <= 0 || !needle || !needle_len) {
		fprintf(stderr, "selfscan: cannot scan\n");
		return;
	}
	maps[n] = '\0';
	uint64_t bytes = 0, regions = 0;
	const char *found_in = NULL;
	uintptr_t found_at = 0;
	for (char *line = strtok(maps, "\n"); line; line = strtok(NULL, "\n")) {
		unsigned long lo, hi;
		char perms[8];
		int off = 0;
		if (sscanf(line, "%lx-%lx %7s %*s %*s %*s%n", &lo, &hi, perms, &off) < 3 ||
		    perms[0] != 'r' || strstr(line, "[vsyscall]") || strstr(line, "[vvar"))
			continue;
		regions++;
		bytes += hi - lo;
		for (const char *p = (const char *)lo; !found_in && p + needle_len <= (const char *)hi;) {
			const char *m = memmem(p, (size_t)((const char *)hi - p), needle, needle_len);
			if (!m)
				break;
			if (m != needle) {
				found_in = line;
				found_at = (uintptr_t)m;
			}
			p = m + 1;
		}
	}
	if (found_in)
		fprintf(stderr, "selfscan: needle found at 0x%lx in %s\n", (unsigned long)found_at,
			found_in);
	else
		fprintf(stderr, "selfscan: %llu bytes in %llu mappings read, needle not found\n",
			(unsigned long long)bytes, (unsigned long long)regions);
}


/* One line per attempt: "sandbox: NAME refused EPERM" or "... ALLOWED". */
static void report(const char *name, long r)
{
	int e = errno;
	if (r < 0)
		fprintf(stderr, "sandbox: %s refused %s\n", name,
			e == EPERM ? "EPERM" : strerrorname_np(e) ? strerrorname_np(e) : "?");
	else
		fprintf(stderr, "sandbox: %s ALLOWED\n", name);
}

static void sandbox_probe(struct runner *rn)
{
	errno = 0;
	report("open", open("/etc/hostname", O_RDONLY));
	report("openat", (long)syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY));
	report("socket-inet", socket(AF_INET, SOCK_STREAM, 0));
	report("socket-unix", socket(AF_UNIX, SOCK_STREAM, 0));
	struct sockaddr_un sun = { .sun_family = AF_UNIX, .sun_path = "/run/dbus/x" };
	report("connect", connect(3, (struct sockaddr *)&sun, sizeof sun));
	/* Harmless where it is allowed: init is not our tracee (ESRCH). */
	report("ptrace", ptrace(PTRACE_PEEKUSER, 1, NULL, NULL));
	void *x = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	report("mmap-exec", x == MAP_FAILED ? -1 : 0);
	void *rw = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	report("mprotect-exec", rw == MAP_FAILED ? -1 : mprotect(rw, 4096, PROT_READ | PROT_EXEC));
	report("memfd_create", (long)syscall(SYS_memfd_create, "x", 0));
	long child = (long)syscall(SYS_fork);
	if (child == 0)
		_exit(0);
	report("fork", child);
	/* A path that does not exist: where exec is allowed it fails ENOENT. */
	char *argv[] = { (char *)"/nonexistent/cloak-probe", NULL };
	report("execve", execve(argv[0], argv, NULL));
	report("unlink", unlink("/tmp/cloak-sandbox-probe-nonexistent"));
	report("prctl-dumpable", prctl(PR_SET_DUMPABLE, 1, 0, 0, 0));
	char b;
	struct iovec l = { &b, 1 }, r = { &b, 1 };
	report("process_vm_readv", process_vm_readv(getppid(), &l, 1, &r, 1, 0));
	report("kill", kill(getppid(), 0));
	report("ioctl-create-vcpu", ioctl(rn->kvm.vm_fd, KVM_CREATE_VCPU, 1));
	struct kvm_userspace_memory_region m = { .slot = 1, .guest_phys_addr = 1ull << 40,
						 .memory_size = 4096,
						 .userspace_addr = (uintptr_t)rw };
	report("ioctl-memslot", ioctl(rn->kvm.vm_fd, KVM_SET_USER_MEMORY_REGION, &m));
	struct kvm_guest_debug dbg = { 0 };
	report("ioctl-guest-debug", ioctl(rn->vcpu.fd, KVM_SET_GUEST_DEBUG, &dbg));
	void *big = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	report("mremap", big == MAP_FAILED ? -1 : (long)(intptr_t)mremap(big, 8192, 1 << 20,
							 MREMAP_MAYMOVE));
	fprintf(stderr, "sandbox: probe done\n");
}

/* A witness that outlives the monitor: a child holding a descriptor for
 * guest memory (the shared backend keeps one) looks at it once the monitor
 * is gone and says how many pages still hold data. Needs --no-sandbox
 * (fork) and --memory=shared (a descriptor to keep). */
static void start_witness(struct guestmem *gm)
{
	int fd = gm_inspect_dup_fd(gm), p[2];
	uint64_t size = gm_size(gm);
	if (fd < 0 || pipe(p) != 0)
		return;
	if (fork() != 0) {
		close(p[0]);
		close(fd);
		return; /* p[1] stays open in the monitor until it dies */
	}
	close(p[1]);
	char c;
	while (read(p[0], &c, 1) > 0)
		;
	const unsigned char *m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	uint64_t dirty = 0;
	for (uint64_t off = 0; m != MAP_FAILED && off < size; off += 4096)
		for (uint64_t i = 0; i < 4096; i++)
			if (m[off + i]) {
				dirty++;
				break;
			}
	fprintf(stderr, "witness: %llu pages hold data after the monitor ended\n",
		(unsigned long long)dirty);
	_exit(0);
}

/* A real page fault (si_code SEGV_MAPERR), as a bug in the monitor makes. */
static void raise_fault(void)
{
	volatile int *volatile p = NULL;
	*p = 1;
}

void test_hooks_on_exit(struct runner *r)
{
	if (hook && !strcmp(hook, "fault-given-up")) {
		if (gm_gave_up(r->gm))
			raise_fault();
		return;
	}
	if (done++ || !hook)
		return;
	if (!strcmp(hook, "sandbox-probe"))
		sandbox_probe(r);
	else if (!strcmp(hook, "fault")) {
		start_witness(r->gm);
		raise_fault();
	} else if (!strcmp(hook, "abort")) {
		start_witness(r->gm);
		abort();
	}
}

bool test_hooks_no_xfer(void)
{
	return hook && !strcmp(hook, "no-xfer");
}

void test_hooks_before_poll(void)
{
	static int scanned;
	if (hook && !strcmp(hook, "signal-before-poll"))
		raise(SIGTERM);
	if (hook && !strcmp(hook, "selfscan") && !scanned) {
		scanned = 1;
		selfscan();
	}
}

bool test_hooks_give_up_anyway(void)
{
	const char *v = getenv("CLOAK_TEST_GIVE_UP");
	return v && !strcmp(v, "1");
}

/* What a compromised device process would try, to get at private pages
 * or the vCPU: a KVM or guest-memory descriptor, or a mapping of one. */
static void device_probe(void)
{
	errno = 0;
	/* (openat itself: open() is kvm/kvm.c's alone, tests/unit/structure.bats.) */
	report("open-dev-kvm", (long)syscall(SYS_openat, AT_FDCWD, "/dev/kvm", O_RDWR));
	report("openat", (long)syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY));
	report("ioctl", ioctl(0, KVM_GET_API_VERSION, 0));
	/* A descriptor it holds (stdin, /dev/null or a file): refused as any
	 * descriptor would be, before the file is asked. */
	void *m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, 0, 0);
	report("mmap-fd", m == MAP_FAILED ? -1 : 0);
	report("memfd_create", (long)syscall(SYS_memfd_create, "x", 0));
	report("pidfd_open", (long)syscall(SYS_pidfd_open, getppid(), 0));
	char b;
	struct iovec l = { &b, 1 }, r = { &b, 1 };
	report("process_vm_readv", process_vm_readv(getppid(), &l, 1, &r, 1, 0));
	report("ptrace", ptrace(PTRACE_PEEKUSER, getppid(), NULL, NULL));
	void *big = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	report("mremap", big == MAP_FAILED ? -1 : (long)(intptr_t)mremap(big, 8192, 1 << 20,
							 MREMAP_MAYMOVE));
	report("malloc-mmap", big == MAP_FAILED ? -1 : 0);
	fprintf(stderr, "sandbox: device probe done\n");
}

void test_hooks_device_enter(bool sandboxed)
{
	if (sandboxed) {
		if (hook && !strcmp(hook, "sandbox-probe-devices"))
			device_probe();
		return;
	}
	if (maps_fd < 0)
		return;
	close(maps_fd);
	maps_fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
}

bool test_hooks_device_keeps(const char *when)
{
	return hook && !strncmp(hook, "device-keeps-", 13) && !strcmp(hook + 13, when);
}

uint32_t test_hooks_device_reply(uint32_t *seq, uint32_t *verdict, int32_t *status)
{
	static bool replied;
	if (replied || !hook || strncmp(hook, "device-", 7))
		return 0;
	replied = true;
	if (!strcmp(hook, "device-garbage"))
		*verdict = 0x5a5a5a5a;
	else if (!strcmp(hook, "device-status")) {
		*verdict = 2; /* end the VM */
		*status = 100000;
	} else if (!strcmp(hook, "device-seq"))
		*seq += 7;
	else if (!strcmp(hook, "device-unsolicited"))
		return *seq + 1;
	return 0;
}

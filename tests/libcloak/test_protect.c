/* SPDX-License-Identifier: ISC */
/*
 * What memfd_secret keeps out: other readers of a secret (process_vm_readv,
 * /proc/self/mem, ptrace PEEKDATA, vmsplice, O_DIRECT I/O) are refused,
 * secrets are absent from core dumps while ordinary heap memory is present,
 * and, where the kernel offers /proc/kcore, a secret's page reads as zeros
 * through the kernel's direct map while an ordinary page shows its bytes.
 * Each check also runs on ordinary memory, so a refusal that is not
 * specific to secrets fails. A plain TAP program (not cmocka) because some
 * checks may have to SKIP.
 */
#include <cloak/secret.h>
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "child.h"
#include "kcore.h"

static int test_number, failures;

static void result(bool ok, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("%sok %d - ", ok ? "" : "not ", ++test_number);
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	failures += !ok;
}

/* SKIP, or a failure when CLOAK_REQUIRE_KVM=1 forbids skipping. */
static void skip(const char *name, const char *why)
{
	if (skip_forbidden())
		result(false, "%s: cannot run (%s) and CLOAK_REQUIRE_KVM=1", name, why);
	else
		printf("ok %d # SKIP %s: %s\n", ++test_number, name, why);
}

/* Runs check(s, control) on a fresh 32-byte pooled secret s and the same
 * bytes in ordinary heap memory (control), then frees both. */
static void on_secret_and_control(void (*check)(unsigned char *s, unsigned char *control))
{
	unsigned char *s = cloak_secret_alloc(32), *control = malloc(32);
	memset(s, 0x5a, 32);
	memset(control, 0x5a, 32);
	check(s, control);
	cloak_secret_free(s);
	free(control);
}

/* A pipe for check `name`, or a failed result saying why there is none. */
static bool open_pipe(int p[2], const char *name)
{
	if (pipe(p) == 0)
		return true;
	result(false, "%s: pipe: %s", name, strerror(errno));
	return false;
}

static ssize_t vm_read(void *addr, size_t n)
{
	char buf[64];
	struct iovec local = { buf, n }, remote = { addr, n };
	return process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
}

static void process_vm_readv_refused(unsigned char *s, unsigned char *control)
{
	unsigned char *g = cloak_secret_alloc_guarded(32);
	errno = 0;
	ssize_t rs = vm_read(s, 32);
	int es = errno;
	errno = 0;
	ssize_t rg = vm_read(g, 32);
	int eg = errno;
	ssize_t rc = vm_read(control, 32);
	result(rs == -1 && es == EFAULT && rg == -1 && eg == EFAULT && rc == 32,
	       "process_vm_readv: pooled %zd (%s), guarded %zd (%s), heap %zd", rs, strerror(es),
	       rg, strerror(eg), rc);
	cloak_secret_free(g);
}

static void proc_self_mem_refused(unsigned char *s, unsigned char *control)
{
	int fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	char buf[32];
	errno = 0;
	ssize_t rs = pread(fd, buf, 32, (off_t)(uintptr_t)s);
	int es = errno;
	ssize_t rc = pread(fd, buf, 32, (off_t)(uintptr_t)control);
	close(fd);
	result(rs == -1 && es == EIO && rc == 32, "/proc/self/mem: secret %zd (%s), heap %zd", rs,
	       strerror(es), rc);
}

/* A tracer's PTRACE_PEEKDATA goes through the kernel's access to the
 * tracee's memory, which refuses secretmem: EIO on the secret, the value
 * on ordinary heap. The tracer is a child attaching to this process. */
static void ptrace_peek_refused(unsigned char *s, unsigned char *control)
{
	int p[2];
	if (!open_pipe(p, "ptrace"))
		return;
	/* Allow the child to trace us even under Yama's ptrace_scope 1. */
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	pid_t parent = getpid(), pid = fork();
	if (pid == 0) {
		long out[4] = { -1, -1, -1, -1 }; /* attach ok, secret errno, heap word, heap errno */
		if (ptrace(PTRACE_SEIZE, parent, 0, 0) == 0) {
			out[0] = 0;
			ptrace(PTRACE_INTERRUPT, parent, 0, 0);
			waitpid(parent, NULL, __WALL);
			errno = 0;
			ptrace(PTRACE_PEEKDATA, parent, s, 0);
			out[1] = errno;
			errno = 0;
			out[2] = ptrace(PTRACE_PEEKDATA, parent, control, 0);
			out[3] = errno;
			ptrace(PTRACE_DETACH, parent, 0, 0);
		} else {
			out[1] = errno;
		}
		if (write(p[1], out, sizeof out) != (ssize_t)sizeof out)
			_exit(2);
		_exit(0);
	}
	close(p[1]);
	long got[4] = { -1, -1, -1, -1 };
	/* The read returns once the child wrote, i.e. after it detached. */
	ssize_t n = read(p[0], got, sizeof got);
	close(p[0]);
	waitpid(pid, NULL, 0);
	long want;
	memset(&want, 0x5a, sizeof want);
	if (n == (ssize_t)sizeof got && got[0] != 0)
		skip("ptrace", "cannot attach to this process (ptrace restrictions)");
	else
		result(n == (ssize_t)sizeof got && got[1] == EIO && got[2] == want && got[3] == 0,
		       "ptrace PEEKDATA: secret errno %ld (%s), heap word %s", got[1],
		       strerror((int)got[1]), got[2] == want ? "read" : "NOT read");
}

static void vmsplice_refused(unsigned char *s, unsigned char *control)
{
	int p[2];
	if (!open_pipe(p, "vmsplice"))
		return;
	struct iovec is = { s, 32 }, ic = { control, 32 };
	errno = 0;
	ssize_t rs = vmsplice(p[1], &is, 1, 0);
	int es = errno;
	ssize_t rc = vmsplice(p[1], &ic, 1, 0);
	close(p[0]);
	close(p[1]);
	result(rs == -1 && es == EFAULT && rc == 32, "vmsplice: secret %zd (%s), heap %zd", rs,
	       strerror(es), rc);
}

static void o_direct_refused(void)
{
	const char *name = "O_DIRECT write from a secret";
	char path[] = "/var/tmp/cloak-odirect-XXXXXX";
	int tmp = mkstemp(path);
	if (tmp < 0) {
		skip(name, "cannot create a file in /var/tmp");
		return;
	}
	close(tmp);
	int fd = open(path, O_WRONLY | O_DIRECT | O_CLOEXEC);
	unlink(path);
	if (fd < 0) {
		skip(name, "the filesystem of /var/tmp refuses O_DIRECT");
		return;
	}
	unsigned char *s = cloak_secret_alloc_guarded(4096); /* page-aligned: ends at a page end */
	unsigned char *control = aligned_alloc(4096, 4096);
	memset(s, 1, 4096);
	memset(control, 1, 4096);
	errno = 0;
	ssize_t rs = pwrite(fd, s, 4096, 0);
	int es = errno;
	ssize_t rc = pwrite(fd, control, 4096, 0);
	close(fd);
	result(rs == -1 && es == EFAULT && rc == 4096, "%s: secret %zd (%s), heap %zd", name, rs,
	       strerror(es), rc);
	cloak_secret_free(s);
	free(control);
}

/* ---- the kernel's direct map, seen through /proc/kcore ---- */

/* Looked up with the helper `cloak check` uses (common/kcore.h): the
 * direct map's segment of /proc/kcore, not the kernel image's second
 * mapping of some of the same pages (which the check reports on its own).
 * A plain SKIP here: hosts without /proc/kcore are the usual case (the
 * kernel option is often off); a tier that runs on such a kernel sets
 * CLOAK_REQUIRE_KCORE=1 to make the skip a failure. */
static void out_of_the_direct_map(void)
{
	const char *name = "a secret's page reads as zeros through the direct map (/proc/kcore)";
	const char *req = getenv("CLOAK_REQUIRE_KCORE");
	bool required = req && !strcmp(req, "1");
	unsigned char *s = cloak_secret_alloc_guarded(64);
	unsigned char *control = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
	                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char pattern[64];
	if (getrandom(pattern, sizeof pattern, 0) != (ssize_t)sizeof pattern)
		memset(pattern, 0xa7, sizeof pattern);
	memcpy(s, pattern, 64);
	memcpy(control, pattern, 64);
	char why_s[200], why_c[200];
	enum kcore_view vs = kcore_view((uintptr_t)s, pattern, 64, why_s, sizeof why_s);
	enum kcore_view vc = kcore_view((uintptr_t)control, pattern, 64, why_c, sizeof why_c);
	if (vs == KCORE_UNAVAILABLE || vc == KCORE_UNAVAILABLE) {
		const char *why = vc == KCORE_UNAVAILABLE ? why_c : why_s;
		if (required)
			result(false, "%s: %s and CLOAK_REQUIRE_KCORE=1", name, why);
		else
			printf("ok %d # SKIP %s: %s\n", ++test_number, name, why);
	} else {
		result(vs == KCORE_HIDDEN && vc == KCORE_VISIBLE, "%s: secret %s (%s), ordinary page %s",
		       name, vs == KCORE_HIDDEN ? "hidden" : "VISIBLE", why_s,
		       vc == KCORE_VISIBLE ? "visible" : "NOT visible");
	}
	cloak_secret_free(s);
	munmap(control, 4096);
}

/* ---- core dumps ---- */

static void print_hex(const char *label, const unsigned char *p, size_t n)
{
	printf("%s ", label);
	for (size_t i = 0; i < n; i++)
		printf("%02x", p[i]);
	printf("\n");
}

/* Child: random bytes in a pooled and a guarded secret and in the heap,
 * their values printed for the parent, then a core dump. */
static int dump_core(void)
{
	struct rlimit unlimited = { RLIM_INFINITY, RLIM_INFINITY };
	setrlimit(RLIMIT_CORE, &unlimited); /* sanitizer runtimes turn cores off */
	unsigned char *pooled = cloak_secret_alloc(32), *guarded = cloak_secret_alloc_guarded(32);
	unsigned char *heap = malloc(32);
	if (getrandom(pooled, 32, 0) != 32 || getrandom(guarded, 32, 0) != 32 ||
	    getrandom(heap, 32, 0) != 32)
		return 2;
	print_hex("pooled", pooled, 32);
	print_hex("guarded", guarded, 32);
	print_hex("heap", heap, 32);
	fflush(stdout);
	signal(SIGABRT, SIG_DFL);
	abort();
}

static bool parse_hex(const char *out, const char *label, unsigned char *bytes)
{
	const char *p = strstr(out, label);
	if (!p)
		return false;
	p += strlen(label) + 1;
	for (int i = 0; i < 32; i++)
		if (sscanf(p + 2 * i, "%2hhx", &bytes[i]) != 1)
			return false;
	return true;
}

static bool file_contains(const char *path, const unsigned char *needle, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0)
		return false;
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return false;
	bool found = memmem(m, (size_t)st.st_size, needle, n) != NULL;
	munmap(m, (size_t)st.st_size);
	return found;
}

static void absent_from_core_dumps(void)
{
	const char *name = "secrets absent from a core dump, heap present";
	char pattern[256] = "";
	FILE *f = fopen("/proc/sys/kernel/core_pattern", "re");
	if (f) {
		if (!fgets(pattern, sizeof pattern, f))
			pattern[0] = 0;
		fclose(f);
	}
	if (pattern[0] == '|' || strchr(pattern, '/')) {
		skip(name, "kernel.core_pattern does not write a core file in the working directory");
		return;
	}
	char dir[] = "/var/tmp/cloak-core-XXXXXX";
	if (!mkdtemp(dir)) {
		skip(name, "cannot create a directory in /var/tmp");
		return;
	}
	struct child_result r;
	run_scenario("dump_core", NULL, dir, &r);
	char core[512] = "";
	DIR *d = opendir(dir);
	for (struct dirent *e; d && (e = readdir(d));)
		if (e->d_name[0] != '.')
			snprintf(core, sizeof core, "%s/%s", dir, e->d_name);
	if (d)
		closedir(d);
	unsigned char pooled[32], guarded[32], heap[32];
	if (!core[0] || r.exited || !parse_hex(r.out, "pooled", pooled) ||
	    !parse_hex(r.out, "guarded", guarded) || !parse_hex(r.out, "heap", heap)) {
		if (core[0])
			unlink(core);
		rmdir(dir);
		skip(name, "the child left no core file (signal or limits)");
		return;
	}
	bool has_pooled = file_contains(core, pooled, 32), has_guarded = file_contains(core, guarded, 32);
	bool has_heap = file_contains(core, heap, 32);
	unlink(core);
	rmdir(dir);
	result(!has_pooled && !has_guarded && has_heap,
	       "%s: pooled %s, guarded %s, heap control %s", name, has_pooled ? "FOUND" : "absent",
	       has_guarded ? "FOUND" : "absent", has_heap ? "present" : "MISSING");
}

static const struct scenario scenarios[] = {
	{ "dump_core", dump_core },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	scenario_dispatch(argc, argv, scenarios);
	require_secretmem_or_skip_all();
	printf("1..7\n");
	on_secret_and_control(process_vm_readv_refused);
	on_secret_and_control(proc_self_mem_refused);
	on_secret_and_control(ptrace_peek_refused);
	on_secret_and_control(vmsplice_refused);
	o_direct_refused();
	absent_from_core_dumps();
	out_of_the_direct_map();
	return failures ? 1 : 0;
}

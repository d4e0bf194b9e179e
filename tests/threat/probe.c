/* SPDX-License-Identifier: ISC */
/*
 * threat-probe: another process attacking a running monitor's guest RAM.
 *
 *   threat-probe PID NEEDLE METHOD...
 *
 * Finds the guest RAM mapping of process PID in /proc/PID/maps (the largest
 * mapping named /secretmem, /memfd:cloak-guest or kvm-gmem) and tries each
 * METHOD on the whole range, searching what comes back for NEEDLE:
 *   readv     process_vm_readv
 *   procmem   pread of /proc/PID/mem
 *   ptrace    PTRACE_ATTACH, then PTRACE_PEEKDATA of the range's first word
 *   stolen    open the mapping's file through /proc/PID/map_files (root),
 *             or take the monitor's descriptor for it with pidfd_getfd,
 *             map it here, then: vmsplice from it, O_DIRECT write from it to
 *             a file in $TMPDIR (or /tmp), and a plain read through it
 *   all-readv, all-procmem, all-peek
 *             the same (all-peek: ptrace PEEKDATA word by word, anonymous
 *             and device mappings) over EVERY readable mapping of PID, not
 *             only guest RAM: what a host process can get out of the monitor
 *   kcore     physical memory, through /proc/kcore's RAM segments (root;
 *             PID is not used): is the needle anywhere in RAM? Here NEEDLE
 *             is the guest's TOKEN and the probe looks for the threat
 *             guests' secret, "CLOAK-THREAT-" + TOKEN reversed + "-SECRET",
 *             computing each byte as it compares: a needle held in any
 *             process's memory (this one's, the shell's) would be found
 *             in RAM too.
 * One line per attempt: "METHOD: refused ERRNO (message)",
 * "METHOD: read N bytes, needle found" or "..., needle not found".
 * If /proc/PID/maps is unreadable (a non-dumpable target), the range can
 * be given as THREAT_RANGE=START-END (hex) in the environment.
 * Prints "range: START-END NAME" (or "range: none") first. Exit 0 unless
 * the arguments are unusable (exit 2).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHUNK (1u << 20)

struct range {
	uint64_t lo, hi;
	char name[256];
};

/* One line of /proc/PID/maps. */
struct maps_line {
	unsigned long long lo, hi;
	char perms[8];
	const char *name; /* the path or [name], "" for anonymous memory */
	char text[512];
};

/* Opens /proc/PID/maps for next_mapping; NULL, errno set, if it cannot. */
static FILE *open_maps(int pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/maps", pid);
	return fopen(path, "re");
}

/* The next mapping of an open maps file into l; false at its end. */
static bool next_mapping(FILE *f, struct maps_line *l)
{
	while (fgets(l->text, sizeof l->text, f)) {
		int off = 0;
		if (sscanf(l->text, "%llx-%llx %7s %*s %*s %*s%n", &l->lo, &l->hi, l->perms, &off) < 3)
			continue;
		l->name = l->text + off;
		while (*l->name == ' ')
			l->name++;
		return true;
	}
	return false;
}

static bool find_guest_ram(int pid, struct range *r)
{
	FILE *f = open_maps(pid);
	if (!f)
		return false;
	memset(r, 0, sizeof *r);
	struct maps_line l;
	while (next_mapping(f, &l)) {
		const char *names[] = { "/secretmem", "/memfd:cloak-guest", "kvm-gmem" };
		for (size_t i = 0; i < 3; i++) {
			const char *n = strstr(l.name, names[i]);
			if (n && l.hi - l.lo > r->hi - r->lo) {
				r->lo = l.lo;
				r->hi = l.hi;
				snprintf(r->name, sizeof r->name, "%.*s", (int)strcspn(n, "\n"), n);
			}
		}
	}
	fclose(f);
	return r->hi > r->lo;
}

/* Searches a stream of chunks for the needle, also across chunk borders. */
struct scan {
	const char *needle;
	size_t nlen;
	char carry[256];
	size_t ncarry;
	bool found;
	uint64_t bytes;
};

static void scan_feed(struct scan *s, const unsigned char *p, size_t n)
{
	s->bytes += n;
	if (s->found || n == 0)
		return;
	if (memmem(p, n, s->needle, s->nlen)) {
		s->found = true;
		return;
	}
	/* Border: the carry (end of the last chunk) + the start of this one. */
	char joint[512];
	size_t head = n < s->nlen ? n : s->nlen;
	memcpy(joint, s->carry, s->ncarry);
	memcpy(joint + s->ncarry, p, head);
	if (memmem(joint, s->ncarry + head, s->needle, s->nlen))
		s->found = true;
	size_t keep = s->nlen - 1 < n ? s->nlen - 1 : n;
	memcpy(s->carry, p + n - keep, keep);
	s->ncarry = keep;
}

static void report(const char *method, int err, const struct scan *s)
{
	if (err)
		printf("%s: refused %s (%s) after %llu bytes\n", method, strerrorname_np(err),
		       strerror(err), (unsigned long long)s->bytes);
	else
		printf("%s: read %llu bytes, needle %s\n", method, (unsigned long long)s->bytes,
		       s->found ? "found" : "not found");
}

static void scan_init(struct scan *s, const char *needle)
{
	memset(s, 0, sizeof *s);
	s->needle = needle;
	s->nlen = strlen(needle);
}

static void by_readv(int pid, const struct range *r, const char *needle)
{
	static unsigned char buf[CHUNK];
	struct scan s;
	scan_init(&s, needle);
	int err = 0;
	for (uint64_t a = r->lo; a < r->hi && !err; a += CHUNK) {
		size_t n = r->hi - a < CHUNK ? r->hi - a : CHUNK;
		struct iovec local = { buf, n }, remote = { (void *)(uintptr_t)a, n };
		ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
		if (got < 0)
			err = errno;
		else
			scan_feed(&s, buf, (size_t)got);
	}
	report("readv", err, &s);
}

static void by_procmem(int pid, const struct range *r, const char *needle)
{
	static unsigned char buf[CHUNK];
	char path[64];
	struct scan s;
	scan_init(&s, needle);
	snprintf(path, sizeof path, "/proc/%d/mem", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int err = fd < 0 ? errno : 0;
	for (uint64_t a = r->lo; a < r->hi && !err; a += CHUNK) {
		size_t n = r->hi - a < CHUNK ? r->hi - a : CHUNK;
		ssize_t got = pread(fd, buf, n, (off_t)a);
		if (got < 0)
			err = errno;
		else
			scan_feed(&s, buf, (size_t)got);
	}
	if (fd >= 0)
		close(fd);
	report(fd < 0 ? "procmem-open" : "procmem", err, &s);
}

static void by_ptrace(int pid, const struct range *r)
{
	if (ptrace(PTRACE_ATTACH, pid, 0, 0) != 0) {
		printf("ptrace-attach: refused %s (%s)\n", strerrorname_np(errno), strerror(errno));
		return;
	}
	printf("ptrace-attach: attached\n");
	waitpid(pid, NULL, __WALL);
	errno = 0;
	long w = ptrace(PTRACE_PEEKDATA, pid, (void *)(uintptr_t)r->lo, 0);
	if (errno)
		printf("ptrace-peek: refused %s (%s)\n", strerrorname_np(errno), strerror(errno));
	else
		printf("ptrace-peek: read 8 bytes (0x%lx)\n", w);
	ptrace(PTRACE_DETACH, pid, 0, 0);
}

static void stolen_vmsplice(const unsigned char *map, size_t len, const char *needle)
{
	struct scan s;
	scan_init(&s, needle);
	int p[2] = { -1, -1 }, err = 0;
	if (pipe(p))
		err = errno;
	static unsigned char buf[65536];
	for (size_t off = 0; off < len && !err; off += sizeof buf) {
		struct iovec iov = { (void *)(map + off), sizeof buf };
		ssize_t n = vmsplice(p[1], &iov, 1, 0);
		if (n < 0) {
			err = errno;
			break;
		}
		ssize_t got = read(p[0], buf, (size_t)n);
		if (got > 0)
			scan_feed(&s, buf, (size_t)got);
	}
	if (p[0] >= 0) {
		close(p[0]);
		close(p[1]);
	}
	report("stolen-vmsplice", err, &s);
}

static void stolen_odirect(const unsigned char *map, size_t len, const char *needle)
{
	struct scan s;
	scan_init(&s, needle);
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char path[512];
	snprintf(path, sizeof path, "%s/threat-probe-XXXXXX", dir);
	int fd = mkstemp(path);
	if (fd < 0) {
		printf("stolen-odirect: cannot create a file in %s: %s\n", dir, strerror(errno));
		return;
	}
	close(fd);
	fd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (fd < 0) {
		printf("stolen-odirect: %s takes no O_DIRECT: %s\n", dir, strerror(errno));
		unlink(path);
		return;
	}
	int err = 0;
	uint64_t written = 0;
	for (size_t off = 0; off < len && !err; off += CHUNK) {
		size_t n = len - off < CHUNK ? len - off : CHUNK;
		ssize_t w = pwrite(fd, map + off, n, (off_t)off);
		if (w < 0)
			err = errno;
		else
			written += (uint64_t)w;
	}
	/* Whatever reached the file: read it back and look for the needle. */
	static unsigned char buf[CHUNK];
	int rfd = open(path, O_RDONLY | O_CLOEXEC);
	for (uint64_t off = 0; rfd >= 0 && off < written; off += CHUNK) {
		ssize_t got = pread(rfd, buf, CHUNK, (off_t)off);
		if (got <= 0)
			break;
		scan_feed(&s, buf, (size_t)got);
	}
	if (rfd >= 0)
		close(rfd);
	close(fd);
	unlink(path);
	report("stolen-odirect", err, &s);
}

/* A SIGBUS/SIGSEGV while reading the stolen mapping ends the probe with a
 * clear line instead of a crash. */
static void on_fault(int sig)
{
	static const char msg[] = "stolen-read: refused SIGBUS/SIGSEGV (fault reading the mapping)\n";
	ssize_t w = write(STDOUT_FILENO, msg, sizeof msg - 1);
	(void)w;
	_exit(0);
}

/* The monitor's own descriptor for the guest RAM file, duplicated into
 * this process with pidfd_getfd (needs PTRACE_MODE_ATTACH: root, or
 * CAP_SYS_PTRACE). -1 with errno if there is none or it is refused. */
static int steal_fd(int pid, const char *name, char *how, size_t howlen)
{
	char dir[64], link[128], target[512];
	snprintf(dir, sizeof dir, "/proc/%d/fd", pid);
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0)
		return -1;
	int found = -1, err = ENOENT;
	for (int n = 0; n < 1024 && found < 0; n++) {
		snprintf(link, sizeof link, "%s/%d", dir, n);
		ssize_t l = readlink(link, target, sizeof target - 1);
		if (l <= 0)
			continue;
		target[l] = 0;
		/* "/secretmem (deleted)" in maps, "/secretmem (deleted)" as fd. */
		char base[64];
		snprintf(base, sizeof base, "%.*s", (int)strcspn(name, " ]"), name);
		if (!strstr(target, base))
			continue;
		found = (int)syscall(SYS_pidfd_getfd, pidfd, n, 0);
		err = errno;
		snprintf(how, howlen, "pidfd_getfd of its fd %d (%s)", n, target);
	}
	close(pidfd);
	errno = err;
	return found;
}

static void by_stolen(int pid, const struct range *r, const char *needle)
{
	char path[128], how[600];
	snprintf(path, sizeof path, "/proc/%d/map_files/%llx-%llx", pid,
		 (unsigned long long)r->lo, (unsigned long long)r->hi);
	snprintf(how, sizeof how, "%s", path);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		printf("stolen-mapfiles: refused %s (%s)\n", strerrorname_np(errno),
		       strerror(errno));
		fd = steal_fd(pid, r->name, how, sizeof how);
		if (fd < 0) {
			printf("stolen-open: refused %s (%s)\n", strerrorname_np(errno),
			       strerror(errno));
			return;
		}
	}
	size_t len = r->hi - r->lo;
	unsigned char *map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		printf("stolen-mmap: refused %s (%s)\n", strerrorname_np(errno), strerror(errno));
		return;
	}
	printf("stolen-open: mapped the monitor's guest RAM file through %s\n", how);
	fflush(stdout);
	stolen_vmsplice(map, len, needle);
	stolen_odirect(map, len, needle);
	fflush(stdout);
	signal(SIGBUS, on_fault);
	signal(SIGSEGV, on_fault);
	struct scan s;
	scan_init(&s, needle);
	for (size_t off = 0; off < len; off += CHUNK)
		scan_feed(&s, map + off, len - off < CHUNK ? len - off : CHUNK);
	report("stolen-read", 0, &s);
	munmap(map, len);
}

/* Every readable mapping of pid: ranges and whether each is a file of
 * the host's own (library, binary), which all-peek skips. */
struct maps {
	struct range r[512];
	bool file[512];
	unsigned n;
};

static bool read_maps(int pid, struct maps *m)
{
	FILE *f = open_maps(pid);
	if (!f)
		return false;
	m->n = 0;
	struct maps_line l;
	while (m->n < 512 && next_mapping(f, &l)) {
		if (l.perms[0] != 'r' || strstr(l.name, "[vsyscall]") || strstr(l.name, "[vvar"))
			continue;
		const char *name = l.name;
		m->r[m->n] = (struct range){ l.lo, l.hi, "" };
		snprintf(m->r[m->n].name, sizeof m->r[m->n].name, "%.*s", (int)strcspn(name, "\n"), name);
		m->file[m->n] = !strncmp(name, "/usr/", 5) || !strncmp(name, "/work/", 6);
		m->n++;
	}
	fclose(f);
	return true;
}

static void all_readv_or_procmem(int pid, bool procmem, const char *needle)
{
	static unsigned char buf[CHUNK];
	struct maps m;
	struct scan s;
	scan_init(&s, needle);
	const char *what = procmem ? "all-procmem" : "all-readv";
	if (!read_maps(pid, &m)) {
		printf("%s: refused %s (cannot read maps)\n", what, strerrorname_np(errno));
		return;
	}
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/mem", pid);
	int fd = procmem ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	unsigned refused = 0;
	for (unsigned i = 0; i < m.n; i++)
		for (uint64_t a = m.r[i].lo; a < m.r[i].hi; a += CHUNK) {
			size_t n = m.r[i].hi - a < CHUNK ? m.r[i].hi - a : CHUNK;
			ssize_t got;
			if (procmem) {
				got = pread(fd, buf, n, (off_t)a);
			} else {
				struct iovec local = { buf, n }, remote = { (void *)(uintptr_t)a, n };
				got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
			}
			if (got <= 0) {
				refused++;
				break;
			}
			scan_feed(&s, buf, (size_t)got);
		}
	if (fd >= 0)
		close(fd);
	printf("%s: %u mappings, %u refused, read %llu bytes, needle %s\n", what, m.n, refused,
	       (unsigned long long)s.bytes, s.found ? "found" : "not found");
}

static void all_peek(int pid, const char *needle)
{
	struct maps m;
	struct scan s;
	scan_init(&s, needle);
	if (!read_maps(pid, &m) || ptrace(PTRACE_ATTACH, pid, 0, 0) != 0) {
		printf("all-peek: refused %s (%s)\n", strerrorname_np(errno), strerror(errno));
		return;
	}
	waitpid(pid, NULL, __WALL);
	unsigned skipped = 0, refused = 0;
	for (unsigned i = 0; i < m.n; i++) {
		if (m.file[i]) {
			skipped++;
			continue;
		}
		for (uint64_t a = m.r[i].lo; a < m.r[i].hi; a += 8) {
			errno = 0;
			long w = ptrace(PTRACE_PEEKDATA, pid, (void *)(uintptr_t)a, 0);
			if (errno) {
				refused++;
				break;
			}
			scan_feed(&s, (const unsigned char *)&w, sizeof w);
		}
	}
	ptrace(PTRACE_DETACH, pid, 0, 0);
	printf("all-peek: %u mappings (%u host files skipped), %u refused, read %llu bytes, "
	       "needle %s\n", m.n, skipped, refused, (unsigned long long)s.bytes,
	       s.found ? "found" : "not found");
}

/* The threat guests' secret for TOKEN, one byte at a time, never whole. */
static int secret_byte(const char *token, size_t tlen, size_t i)
{
	static const char head[] = "CLOAK-THREAT-", tail[] = "-SECRET";
	if (i < sizeof head - 1)
		return head[i];
	i -= sizeof head - 1;
	if (i < tlen)
		return token[tlen - 1 - i];
	i -= tlen;
	return i < sizeof tail - 1 ? tail[i] : -1;
}

static bool secret_at(const unsigned char *p, size_t avail, const char *token, size_t tlen)
{
	size_t n = 13 + tlen + 7;
	if (avail < n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)secret_byte(token, tlen, i))
			return false;
	return true;
}

/* Physical memory through /proc/kcore: its PT_LOAD segments with a
 * physical address (RAM and kernel text), read in overlapping chunks. */
static void by_kcore(const char *token)
{
	static unsigned char buf[CHUNK + 256];
	size_t tlen = strlen(token), n = 13 + tlen + 7;
	int fd = open("/proc/kcore", O_RDONLY | O_CLOEXEC);
	unsigned char eh[64];
	if (fd < 0 || pread(fd, eh, sizeof eh, 0) != (ssize_t)sizeof eh) {
		printf("kcore: refused %s (%s)\n", strerrorname_np(errno), strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	uint64_t phoff, bytes = 0, found = 0;
	uint16_t phentsize, phnum;
	memcpy(&phoff, eh + 32, 8);
	memcpy(&phentsize, eh + 54, 2);
	memcpy(&phnum, eh + 56, 2);
	for (unsigned i = 0; i < phnum; i++) {
		unsigned char ph[56];
		if (pread(fd, ph, sizeof ph, (off_t)(phoff + (uint64_t)i * phentsize)) != (ssize_t)sizeof ph)
			break;
		uint32_t type;
		uint64_t off, paddr, filesz;
		memcpy(&type, ph, 4);
		memcpy(&off, ph + 8, 8);
		memcpy(&paddr, ph + 24, 8);
		memcpy(&filesz, ph + 32, 8);
		if (type != 1 || paddr == UINT64_MAX)
			continue;
		for (uint64_t a = 0; a < filesz; a += CHUNK) {
			size_t want = filesz - a < CHUNK + n ? filesz - a : CHUNK + n;
			ssize_t got = pread(fd, buf, want, (off_t)(off + a));
			if (got <= 0)
				break;
			size_t scan = (size_t)got < CHUNK ? (size_t)got : CHUNK;
			bytes += scan;
			for (size_t k = 0; k < scan; k++) {
				const unsigned char *q = memchr(buf + k, 'C', scan - k);
				if (!q)
					break;
				k = (size_t)(q - buf);
				found += secret_at(q, (size_t)got - k, token, tlen);
			}
		}
	}
	close(fd);
	printf("kcore: read %llu bytes of RAM, needle %s\n", (unsigned long long)bytes,
	       found ? "found" : "not found");
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: threat-probe PID NEEDLE readv|procmem|ptrace|stolen...\n");
		return 2;
	}
	int pid = atoi(argv[1]);
	const char *needle = argv[2];
	if (pid <= 0 || strlen(needle) == 0 || strlen(needle) > 200) {
		fprintf(stderr, "threat-probe: need a PID and a needle of 1-200 bytes\n");
		return 2;
	}
	/* Without guest RAM (a control process) only ptrace is meaningful. */
	struct range r;
	bool have = find_guest_ram(pid, &r);
	const char *given = getenv("THREAT_RANGE"); /* START-END, hex, when maps is unreadable */
	unsigned long long lo, hi;
	if (!have && given && sscanf(given, "%llx-%llx", &lo, &hi) == 2 && hi > lo) {
		r.lo = lo;
		r.hi = hi;
		snprintf(r.name, sizeof r.name, "(from THREAT_RANGE)");
		have = true;
	}
	if (have)
		printf("range: %llx-%llx %s\n", (unsigned long long)r.lo,
		       (unsigned long long)r.hi, r.name);
	else
		printf("range: none\n");
	fflush(stdout);
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "all-readv") || !strcmp(argv[i], "all-procmem"))
			all_readv_or_procmem(pid, argv[i][4] == 'p', needle);
		else if (!strcmp(argv[i], "all-peek"))
			all_peek(pid, needle);
		else if (!strcmp(argv[i], "kcore"))
			by_kcore(needle);
		else if (!have && strcmp(argv[i], "ptrace"))
			printf("%s: no guest RAM mapping in /proc/%d/maps\n", argv[i], pid);
		else if (!strcmp(argv[i], "readv"))
			by_readv(pid, &r, needle);
		else if (!strcmp(argv[i], "procmem"))
			by_procmem(pid, &r, needle);
		else if (!strcmp(argv[i], "ptrace"))
			by_ptrace(pid, &r);
		else if (!strcmp(argv[i], "stolen"))
			by_stolen(pid, &r, needle);
		else {
			fprintf(stderr, "threat-probe: unknown method %s\n", argv[i]);
			return 2;
		}
		fflush(stdout);
	}
	return 0;
}

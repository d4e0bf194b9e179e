/* SPDX-License-Identifier: ISC */
/*
 * Memory probes for `cloak check`; see probe.h.
 *
 * Every probe acts on guest memory made by gm_create(), the monitor's own
 * code path, with a marker written through gm_copy_to(). The mapping's
 * address (gm_slot) is used only as a number handed to system calls, the
 * way KVM gets it; this file never dereferences it. Each refusal is
 * compared with a control: the same call on an ordinary anonymous page
 * holding the same marker must succeed, otherwise the refusal proves
 * nothing and the verdict is "unknown".
 */
#include "probe.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/magic.h>

#include "cloak/abi.h"
#include "kcore.h"
#include "kvm/kvm.h"
#include "kvm/kvm_compat.h"
#include "mem/give_up.h"
#include "mem/inspect.h"
#include "probe_kvm.h"
#include "probe_split.h"
#include "secretmem.h"

#define PROBE_MEM (4ull << 20) /* 1024 pages: fits the default 8 MiB memlock */
#define PG CLOAK_PAGE_SIZE

const struct row_info check_rows[ROW_COUNT] = {
	[ROW_DIRECT_MAP] = { "direct_map", "out of the kernel direct map" },
	[ROW_IMAGE_MAP] = { "image_map", "out of the kernel image's mapping too" },
	[ROW_VM_READV] = { "process_vm_readv", "refused to process_vm_readv (another process)" },
	[ROW_PROC_MEM] = { "proc_pid_mem", "refused through /proc/PID/mem" },
	[ROW_VMSPLICE] = { "vmsplice", "refused to vmsplice (GUP)" },
	[ROW_O_DIRECT] = { "o_direct", "refused to O_DIRECT writes (GUP)" },
	[ROW_HIDDEN] = { "hidden_from_monitor", "hidden from the monitor process" },
	[ROW_CORE_DUMP] = { "core_dump", "excluded from core dumps" },
	[ROW_FORK] = { "fork", "not inherited on fork" },
	[ROW_WIPE] = { "wipe", "wiped on release" },
	[ROW_KVM_RUN] = { "kvm_run", "KVM runs a guest from it" },
	[ROW_DEVICES_APART] = { "devices_apart", "host-facing code: no private page, no vCPU" },
};

bool row_claimed(enum gm_backend backend, enum check_row row, const struct guest_memfd_caps *caps)
{
	switch (row) {
	case ROW_FORK:
	case ROW_WIPE:
	case ROW_KVM_RUN:
	case ROW_DEVICES_APART: /* the device process, the default */
		return true; /* every backend */
	case ROW_HIDDEN:
	{	/* guest_memfd where KVM runs it without the monitor's mapping */
		char why[200];
		return backend == GM_BACKEND_GMEM && give_up_possible(why, sizeof why);
	}
	case ROW_IMAGE_MAP:
		/* No backend takes pages out of it: a page freed from the kernel
		 * image at boot may stay mapped there (x86-64 kernels unmap
		 * those only where page-table isolation is on). */
		return false;
	case ROW_CORE_DUMP:
		return backend == GM_BACKEND_SECRET || backend == GM_BACKEND_GMEM;
	case ROW_DIRECT_MAP:
		return backend == GM_BACKEND_SECRET ||
		       (backend == GM_BACKEND_GMEM && caps->flags & CLOAK_GUEST_MEMFD_FLAG_NO_DIRECT_MAP);
	default:
		return backend == GM_BACKEND_SECRET;
	}
}


/* The try_* helpers return the outcome of one access attempt: 0 = it went
 * through (and, for reads, returned the marker), else the errno, or -1 when
 * a read succeeded but returned other bytes. */
static int compare(const unsigned char *got, ssize_t n, const unsigned char *marker)
{
	if (n < 0)
		return errno ? errno : -1;
	return n == (ssize_t)PG && !memcmp(got, marker, PG) ? 0 : -1;
}

static int try_vm_readv(pid_t pid, uint64_t addr, const unsigned char *marker)
{
	unsigned char buf[PG];
	struct iovec local = { buf, PG }, remote = { (void *)(uintptr_t)addr, PG };
	errno = 0;
	return compare(buf, process_vm_readv(pid, &local, 1, &remote, 1, 0), marker);
}

static int try_proc_mem(pid_t pid, uint64_t addr, const unsigned char *marker)
{
	char path[64];
	unsigned char buf[PG];
	snprintf(path, sizeof path, "/proc/%d/mem", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	errno = 0;
	ssize_t n = pread(fd, buf, PG, (off_t)addr);
	int r = compare(buf, n, marker);
	close(fd);
	return r;
}

/* The address range of the mapping that starts at addr, per /proc/PID/maps
 * ("" if absent); also its smaps VmFlags and path. */
struct map_info {
	bool found;
	char perms[8];
	char path[128];
	char vmflags[160];
};

static void map_lookup(pid_t pid, uint64_t addr, struct map_info *mi)
{
	char path[64], line[512];
	memset(mi, 0, sizeof *mi);
	snprintf(path, sizeof path, "/proc/%d/smaps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	bool in = false;
	while (fgets(line, sizeof line, f)) {
		unsigned long long lo, hi;
		char perms[8];
		int off = 0;
		if (sscanf(line, "%llx-%llx %7s %*s %*s %*s%n", &lo, &hi, perms, &off) == 3 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			in = lo == addr;
			if (in) {
				mi->found = true;
				snprintf(mi->perms, sizeof mi->perms, "%s", perms);
				const char *p = line + off;
				while (*p == ' ')
					p++;
				snprintf(mi->path, sizeof mi->path, "%.*s", (int)strcspn(p, "\n"), p);
			}
			continue;
		}
		if (in && !strncmp(line, "VmFlags:", 8))
			snprintf(mi->vmflags, sizeof mi->vmflags, "%.*s",
				 (int)strcspn(line + 8, "\n"), line + 8);
	}
	fclose(f);
}

static bool has_flag(const char *vmflags, const char *flag)
{
	char padded[170];
	snprintf(padded, sizeof padded, " %s ", vmflags);
	char want[8];
	snprintf(want, sizeof want, " %s ", flag);
	return strstr(padded, want) != NULL;
}

/* What a forked child saw, sent back through a pipe. */
struct child_view {
	int readv, readv_ctl;   /* process_vm_readv on the parent */
	int mem, mem_ctl;       /* /proc/PPID/mem */
	int inherited;          /* 1 if the child has a mapping at addr */
	int ran;
};

static void child_probe(uint64_t addr, uint64_t ctl, const unsigned char *marker,
			struct child_view *cv)
{
	int p[2];
	memset(cv, 0, sizeof *cv);
	if (pipe2(p, O_CLOEXEC))
		return;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		struct child_view v = { .ran = 1 };
		v.readv = try_vm_readv(parent, addr, marker);
		v.readv_ctl = try_vm_readv(parent, ctl, marker);
		v.mem = try_proc_mem(parent, addr, marker);
		v.mem_ctl = try_proc_mem(parent, ctl, marker);
		struct map_info mi;
		map_lookup(getpid(), addr, &mi);
		v.inherited = mi.found;
		ssize_t w = write(p[1], &v, sizeof v);
		_exit(w == (ssize_t)sizeof v ? 0 : 1);
	}
	close(p[1]);
	if (pid > 0) {
		if (read(p[0], cv, sizeof *cv) != (ssize_t)sizeof *cv)
			cv->ran = 0;
		waitpid(pid, NULL, 0);
	}
	close(p[0]);
}

static int try_vmsplice(uint64_t addr)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK))
		return errno;
	struct iovec iov = { (void *)(uintptr_t)addr, PG };
	errno = 0;
	ssize_t n = vmsplice(p[1], &iov, 1, 0);
	int r = n == (ssize_t)PG ? 0 : (errno ? errno : -1);
	close(p[0]);
	close(p[1]);
	return r;
}

/* An O_DIRECT file on `dir`, unlinked; -1 with errno (EINVAL: the file
 * system does not support O_DIRECT). */
static int direct_file(const char *dir)
{
	char path[256];
	snprintf(path, sizeof path, "%s/cloak-check-XXXXXX", dir);
	int fd = mkstemp(path);
	if (fd < 0)
		return -1;
	close(fd);
	fd = open(path, O_WRONLY | O_DIRECT | O_CLOEXEC);
	int e = errno;
	unlink(path);
	errno = e;
	return fd;
}

static int try_o_direct(int fd, uint64_t addr)
{
	errno = 0;
	ssize_t n = pwrite(fd, (const void *)(uintptr_t)addr, PG, 0);
	return n == (ssize_t)PG ? 0 : (errno ? errno : -1);
}

/* A refusal is evidence only if the control page went through. */
static void judge_refusal(struct row_result *r, const char *what, int secret, int control)
{
	if (control != 0)
		probe_set(r, PV_UNKNOWN, "%s on an ordinary page failed too (%s): cannot tell", what,
		    probe_errname(control));
	else if (secret == 0)
		probe_set(r, PV_NO, "%s went through, as on an ordinary page", what);
	else if (secret == -1)
		probe_set(r, PV_NO, "%s succeeded but returned other bytes", what);
	else
		probe_set(r, PV_YES, "%s: %s (on an ordinary page it goes through)", what,
		    probe_errname(secret));
}

static void probe_direct_map(struct backend_report *rep, struct guestmem *gm,
			     const unsigned char *marker, const struct guest_memfd_caps *caps)
{
	int64_t before = direct_map_splits();
	bool wrote = true;
	for (uint64_t off = 0; off < PROBE_MEM; off += PG)
		wrote &= gm_copy_to(gm, gpa(off), marker, PG) == GM_OK;
	int64_t after = direct_map_splits();
	struct row_result *r = &rep->row[ROW_DIRECT_MAP];
	if (!wrote) {
		probe_set(r, PV_UNKNOWN, "could not write the marker into guest memory");
		probe_set(&rep->row[ROW_IMAGE_MAP], PV_UNKNOWN, "could not write the marker into guest memory");
		return;
	}
	/* Where the kernel offers /proc/kcore, look: does the direct map
	 * show the marker just written through the monitor's own mapping? */
	struct gm_slot slot;
	gm_slot(gm, &slot);
	char why[200];
	struct row_result *img = &rep->row[ROW_IMAGE_MAP];
	enum kcore_view iv = kcore_image_view((uintptr_t)slot.userspace_addr, PROBE_MEM / PG,
					      marker, 64, why, sizeof why);
	probe_set(img, iv == KCORE_UNAVAILABLE ? PV_UNKNOWN : iv == KCORE_HIDDEN ? PV_YES : PV_NO,
	    "%s%s", iv == KCORE_UNAVAILABLE ? "not observed: " : "", why);
	enum kcore_view kv = kcore_view((uintptr_t)slot.userspace_addr, marker, 64, why, sizeof why);
	if (kv != KCORE_UNAVAILABLE) {
		probe_set(r, kv == KCORE_HIDDEN ? PV_YES : PV_NO, "%s", why);
		return;
	}
	bool removes = rep->backend == GM_BACKEND_SECRET ||
		       (rep->backend == GM_BACKEND_GMEM &&
			caps->flags & CLOAK_GUEST_MEMFD_FLAG_NO_DIRECT_MAP);
	if (!removes) {
		probe_set(r, PV_NO, "%s pages stay in the direct map (%s); faulting %llu pages "
		    "moved direct_map splits by %lld", gm_backend_name(rep->backend),
		    rep->backend == GM_BACKEND_GMEM ? "guest_memfd lacks NO_DIRECT_MAP here"
						     : "ordinary page cache",
		    PROBE_MEM / PG, before >= 0 && after >= 0 ? (long long)(after - before) : -1LL);
	} else if (before < 0 || after < 0) {
		probe_set(r, PV_UNKNOWN, "not observed: no /proc/kcore to look at the page (%s), and "
		    "/proc/vmstat has no direct_map_level*_splits", why);
	} else if (after > before) {
		probe_set(r, PV_YES, "faulting %llu pages split huge direct-map pages %lld times "
		    "(/proc/vmstat direct_map_level2/3_splits)", PROBE_MEM / PG,
		    (long long)(after - before));
	} else {
		probe_set(r, PV_UNKNOWN, "not observed: no /proc/kcore to look at the page, and "
		    "faulting %llu pages moved no direct_map split counter (the counters move "
		    "only when a huge direct-map page is split)", PROBE_MEM / PG);
	}
}

static void probe_gup(struct backend_report *rep, uint64_t addr, uint64_t ctl,
		      const unsigned char *marker, const struct child_view *cv)
{
	if (!cv->ran) {
		probe_set(&rep->row[ROW_VM_READV], PV_UNKNOWN, "could not fork a probing child");
		probe_set(&rep->row[ROW_PROC_MEM], PV_UNKNOWN, "could not fork a probing child");
	} else {
		judge_refusal(&rep->row[ROW_VM_READV], "process_vm_readv from a child",
			      cv->readv, cv->readv_ctl);
		int own = try_proc_mem(getpid(), addr, marker);
		int own_ctl = try_proc_mem(getpid(), ctl, marker);
		struct row_result other, self;
		judge_refusal(&other, "pread of /proc/PPID/mem by a child", cv->mem, cv->mem_ctl);
		judge_refusal(&self, "the owner's pread of /proc/self/mem", own, own_ctl);
		struct row_result *r = &rep->row[ROW_PROC_MEM];
		r->v = other.v == PV_NO || self.v == PV_NO ? PV_NO
		       : other.v == PV_YES && self.v == PV_YES ? PV_YES : PV_UNKNOWN;
		snprintf(r->how, sizeof r->how, "%.170s; %.170s", other.how, self.how);
	}
	judge_refusal(&rep->row[ROW_VMSPLICE], "vmsplice from the mapping",
		      try_vmsplice(addr), try_vmsplice(ctl));

	struct row_result *r = &rep->row[ROW_O_DIRECT];
	/* tmpfs takes O_DIRECT but copies the data (no GUP), so a write
	 * there proves nothing either way: only other file systems count. */
	const char *dirs[] = { "/tmp", "/var/tmp", "." };
	char tried[200] = "";
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
		struct statfs sf;
		bool tmpfs = !statfs(dirs[i], &sf) && sf.f_type == TMPFS_MAGIC;
		int fd = tmpfs ? -1 : direct_file(dirs[i]);
		if (fd < 0) {
			size_t l = strlen(tried);
			snprintf(tried + l, sizeof tried - l, "%s%s (%s)", l ? ", " : "", dirs[i],
				 tmpfs ? "tmpfs, which copies O_DIRECT data without GUP"
				 : errno == EINVAL ? "no O_DIRECT support" : probe_errname(errno));
			continue;
		}
		char what[96];
		snprintf(what, sizeof what, "O_DIRECT write to a file in %s",
			 strcmp(dirs[i], ".") ? dirs[i] : "the current directory");
		judge_refusal(r, what, try_o_direct(fd, addr), try_o_direct(fd, ctl));
		close(fd);
		return;
	}
	probe_set(r, PV_UNKNOWN, "not tested: no file system here takes O_DIRECT through GUP: %s", tried);
}

static void probe_mapping(struct backend_report *rep, uint64_t addr, const struct child_view *cv)
{
	struct map_info mi;
	map_lookup(getpid(), addr, &mi);
	if (!mi.found) {
		probe_set(&rep->row[ROW_CORE_DUMP], PV_UNKNOWN, "mapping not found in /proc/self/smaps");
	} else if (has_flag(mi.vmflags, "dd")) {
		probe_set(&rep->row[ROW_CORE_DUMP], PV_YES, "smaps VmFlags of %s (%s) include dd "
		    "(VM_DONTDUMP)", mi.path[0] ? mi.path : "the mapping", mi.perms);
	} else {
		probe_set(&rep->row[ROW_CORE_DUMP], PV_NO, "smaps VmFlags of %s lack dd: [%s]",
		    mi.path[0] ? mi.path : "the mapping", mi.vmflags);
	}
	if (!cv->ran)
		probe_set(&rep->row[ROW_FORK], PV_UNKNOWN, "could not fork a probing child");
	else if (cv->inherited)
		probe_set(&rep->row[ROW_FORK], PV_NO, "a forked child has the mapping in its maps");
	else
		probe_set(&rep->row[ROW_FORK], PV_YES, "a forked child has no mapping there (%s)",
		    has_flag(mi.vmflags, "de") ? "VmFlags de: MADV_DONTFORK" : "not in its maps");
	bool secret_name = strstr(mi.path, "secretmem") != NULL;
	probe_set(&rep->row[ROW_HIDDEN], PV_NO, "the monitor maps guest RAM %s at 0x%llx%s",
	    mi.perms, (unsigned long long)addr,
	    secret_name ? " (named /secretmem in its maps)" : "");
}

static void probe_wipe(struct backend_report *rep, struct guestmem *gm,
		       const unsigned char *marker)
{
	struct row_result *r = &rep->row[ROW_WIPE];
	int fd = gm_inspect_dup_fd(gm);
	gm_destroy(gm);
	if (fd < 0) {
		probe_set(r, PV_UNKNOWN, "no file behind this backend to look at after release");
		return;
	}
	unsigned char *p = mmap(NULL, PROBE_MEM, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		probe_set(r, PV_UNKNOWN, "cannot map the released memory to look at it: %s",
		    probe_errname(errno));
		close(fd);
		return;
	}
	/* Each page is read through a pipe, never by a load: where the kernel
	 * charges a secret page to RLIMIT_MEMLOCK when it is touched, a load
	 * past the limit is a SIGBUS, and the same fault inside write(2) is an
	 * EFAULT this probe can report. */
	uint64_t marked = 0, nonzero = 0;
	static uint64_t page[PG / 8];
	int pfd[2];
	int err = pipe2(pfd, O_CLOEXEC) ? errno : 0;
	bool pfd_ok = !err;
	for (uint64_t off = 0; !err && off < PROBE_MEM; off += PG) {
		if (write(pfd[1], p + off, PG) != (ssize_t)PG || read(pfd[0], page, PG) != (ssize_t)PG) {
			err = errno ? errno : EIO;
			break;
		}
		if (!memcmp(page, marker, 64))
			marked++;
		for (uint64_t i = 0; i < PG / 8; i++)
			if (page[i]) {
				nonzero++;
				break;
			}
	}
	if (pfd_ok) {
		close(pfd[0]);
		close(pfd[1]);
	}
	munmap(p, PROBE_MEM);
	close(fd);
	if (err)
		probe_set(r, PV_UNKNOWN, "cannot read the released memory back: %s%s", probe_errname(err),
		    err == EFAULT ? " (a page past RLIMIT_MEMLOCK: raise `ulimit -l`)" : "");
	else if (nonzero)
		probe_set(r, PV_NO, "after release %llu of %llu pages still hold data (%llu the marker)",
		    (unsigned long long)nonzero, PROBE_MEM / PG, (unsigned long long)marked);
	else
		probe_set(r, PV_YES, "all %llu marked pages read back zero through the backing file "
		    "after release", PROBE_MEM / PG);
}

static void make_marker(unsigned char *m)
{
	char head[64];
	int n = snprintf(head, sizeof head, "cloak-check-marker-%d-%08x-", (int)getpid(),
			 (unsigned)random());
	for (size_t i = 0; i < PG; i++)
		m[i] = i < (size_t)n ? (unsigned char)head[i] : (unsigned char)('A' + i % 26);
}

void probe_backend(enum gm_backend backend, bool kvm_ok, const struct guest_memfd_caps *caps,
		   struct backend_report *rep)
{
	memset(rep, 0, sizeof *rep);
	rep->backend = backend;
	for (int i = 0; i < ROW_COUNT; i++)
		probe_set(&rep->row[i], PV_UNKNOWN, "not probed");

	struct kvm_host kvm = { .kvm_fd = -1, .vm_fd = -1, .api = -1, .cpuid = { .kvm_fd = -1 } };
	struct fail f = { 0 };
	struct guestmem *gm = NULL;
	if (backend == GM_BACKEND_GMEM && (!kvm_ok || kvm_open(&kvm, &f)))
		fail_set(&f, CLOAK_EXIT_NOHOST, "guest_memfd needs KVM, which is not usable here");
	else
		/* The wipe probe re-reads the memory through its descriptor,
		 * which a guest's memory does not keep (mem/backend.c). */
		gm = gm_create_inspectable(backend, PROBE_MEM, kvm.vm_fd, &f);
	if (!gm) {
		snprintf(rep->unavailable, sizeof rep->unavailable, "%.319s", f.msg);
		for (int i = 0; i < ROW_COUNT; i++)
			probe_set(&rep->row[i], PV_NO, "backend unavailable: %.300s", f.msg);
	} else {
		rep->available = true;
		static unsigned char marker[PG], ctl_page_storage[2 * PG];
		make_marker(marker);
		unsigned char *ctl = (unsigned char *)(((uintptr_t)ctl_page_storage + PG - 1) &
						       ~(uintptr_t)(PG - 1));
		memcpy(ctl, marker, PG);
		struct gm_slot slot;
		gm_slot(gm, &slot);
		probe_direct_map(rep, gm, marker, caps);
		struct child_view cv;
		child_probe(slot.userspace_addr, (uintptr_t)ctl, marker, &cv);
		probe_gup(rep, slot.userspace_addr, (uintptr_t)ctl, marker, &cv);
		probe_mapping(rep, slot.userspace_addr, &cv);
		probe_wipe(rep, gm, marker);
		probe_devices_apart(backend, kvm.vm_fd, &rep->row[ROW_DEVICES_APART]);
	}
	kvm_close(&kvm);
	if (!rep->available)
		return;
	if (!kvm_ok) {
		probe_set(&rep->row[ROW_KVM_RUN], PV_NO, "KVM is not usable on this host");
		return;
	}
	probe_kvm_run(backend, &rep->row[ROW_KVM_RUN], &rep->row[ROW_HIDDEN]);
}

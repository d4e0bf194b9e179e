# SPDX-License-Identifier: ISC
"""Helpers for the comparison benchmark (bench/peers-bench).

Statistics over interleaved rounds, the run's metadata (date, machine,
commit, load), where a peer build is looked for, and the boot-time
breakdown from a syscall trace.
"""
import datetime
import os
import re
import subprocess
import tempfile


# ---------------------------------------------------------------- statistics

def median(xs):
    s = sorted(xs)
    n = len(s)
    if not n:
        return float("nan")
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def percentile(xs, p):
    """Nearest-rank percentile, p in [0, 100]."""
    s = sorted(xs)
    if not s:
        return float("nan")
    k = max(0, min(len(s) - 1, int(round(p / 100 * (len(s) - 1)))))
    return s[k]


def spread(xs, fmt="%.2f"):
    """'median (min-max)' of the values of all rounds."""
    if not xs:
        return "absent"
    return (fmt + " (" + fmt + "–" + fmt + ")") % (median(xs), min(xs), max(xs))


def ratio(num, den):
    """Ratio of the medians, with the 10th-90th percentile of the per-round
    ratios (rounds are interleaved, so round k of both ran side by side).
    Returns (value, text); value is None when the reference is absent."""
    if not num or not den:
        return None, "absent"
    m = median(num) / median(den) if median(den) else float("nan")
    per = [a / b for a, b in zip(num, den) if b > 0]
    if not per:
        return m, "%.2fx" % m
    return m, "%.2fx (rounds %.2f–%.2f)" % (m, percentile(per, 10), percentile(per, 90))


def verdict(value, limit, at_most=True):
    if value is None:
        return "not measured (peer absent)"
    ok = value <= limit if at_most else value >= limit
    return "**met**" if ok else "**missed**"


# ------------------------------------------------------------------ metadata

def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "unknown"


def machine():
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        kvm = sorted(m for m in os.listdir("/sys/module") if m.startswith("kvm"))
    except OSError:
        kvm = []
    return "%s, %d cores, %s, KVM modules: %s" % (os.uname().release, os.cpu_count() or 0, cpu,
                                                  " ".join(kvm) or "none listed")


def commit():
    # Where the tree has no git metadata (the SVM tier's VM), run-svm
    # passes the commit in.
    if os.environ.get("CLOAK_BENCH_COMMIT"):
        return os.environ["CLOAK_BENCH_COMMIT"]
    try:
        rev = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True,
                             text=True, timeout=10).stdout.strip()
    except OSError:
        rev = ""
    return rev or "unknown"


def now_utc():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ")


# ------------------------------------------------------------- the peer build

# Files the comparison needs in a Solo5 build tree (SOLO5_DIR): the hvt
# tender, its hello test, and four guests doing the same work as cloak's
# bench guests (see docs/performance.md).
SOLO5_FILES = {
    "tender": "tenders/hvt/solo5-hvt",
    "hello": "tests/test_hello/test_hello.hvt",
    "empty": "tests/test_bench_empty/test_bench_empty.hvt",
    "calls": "tests/test_bench_calls/test_bench_calls.hvt",
    "blk": "tests/test_bench_blk/test_bench_blk.hvt",
    "idle": "tests/test_bench_idle/test_bench_idle.hvt",
}


def find_solo5():
    """Returns (paths, None) or (None, why the peer figures are absent)."""
    top = os.environ.get("SOLO5_DIR", "")
    if not top:
        return None, "SOLO5_DIR is not set"
    paths = {k: os.path.join(top, v) for k, v in SOLO5_FILES.items()}
    missing = [p for p in paths.values() if not os.access(p, os.X_OK if p.endswith("hvt") else os.R_OK)]
    if missing:
        return None, "SOLO5_DIR=%s lacks %s" % (top, ", ".join(missing))
    return paths, None


# ---------------------------------------------------------------- processes

def host_nanosleep_zero_us(n=2000):
    """µs per nanosleep({0, 0}) in this process: what a sleep with nothing
    to wait for costs on this host (the kernel's timer slack and more)."""
    import ctypes
    import time

    class Timespec(ctypes.Structure):
        _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]

    libc = ctypes.CDLL(None, use_errno=True)
    z = Timespec(0, 0)
    t0 = time.perf_counter()
    for _ in range(n):
        libc.nanosleep(ctypes.byref(z), None)
    return (time.perf_counter() - t0) / n * 1e6


def run(cmd, timeout=600):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if r.returncode:
        raise SystemExit("%s failed (exit %d): %s" % (" ".join(cmd), r.returncode,
                                                       (r.stdout + r.stderr).strip()[-400:]))
    return r.stdout


def fields(line):
    """'a=1 b=2' -> {'a': 1, 'b': 2}"""
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", line)}


def peak_rss_kib(pid):
    """VmHWM of a running process: its peak RSS since exec. (A child's
    ru_maxrss would also count the RSS of whoever forked it.)"""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def guest_pages_kib(pid, mem_bytes):
    """KiB resident in guest memory of a running monitor, or None if the
    process is gone or its smaps cannot be read."""
    try:
        with open("/proc/%d/smaps" % pid) as f:
            return guest_pages_in_smaps(f.read(), mem_bytes)
    except OSError:
        return None


def rss_by_mapping(pid, mem_bytes):
    """{what: resident KiB} of a running process from /proc/PID/smaps: each
    mapped file by its base name, guest memory, [heap], [stack], and
    anonymous mappings; None if it cannot be read."""
    try:
        with open("/proc/%d/smaps" % pid) as f:
            text = f.read()
    except OSError:
        return None
    guest_key = None
    size, out, key, name = {}, {}, None, None
    vmas = []
    for line in text.splitlines():
        m = re.match(r"^[0-9a-f]+-[0-9a-f]+ \S+ \S+ (\S+) (\d+)\s*(.*)$", line)
        if m:
            key = (m.group(1), m.group(2)) if m.group(2) != "0" else None
            path = m.group(3).replace(" (deleted)", "")
            name = os.path.basename(path) if path.startswith("/") else (path or "anonymous")
            continue
        m = re.match(r"^(Size|Rss):\s+(\d+) kB", line)
        if m and m.group(1) == "Size" and key:
            size[key] = size.get(key, 0) + int(m.group(2))
        elif m and m.group(1) == "Rss":
            vmas.append((key, name, int(m.group(2))))
    for k, sz in size.items():
        if sz * 1024 == mem_bytes:
            guest_key = k
    for k, n, rss in vmas:
        n = "guest memory" if guest_key and k == guest_key else n
        out[n] = out.get(n, 0) + rss
    return out


def _file_totals(text):
    """({(device, inode): Size KiB}, {(device, inode): Rss KiB}) over the
    file mappings of a smaps text."""
    size, rss, key = {}, {}, None
    for line in text.splitlines():
        m = re.match(r"^[0-9a-f]+-[0-9a-f]+ \S+ \S+ (\S+) (\d+)", line)
        if m:
            key = (m.group(1), m.group(2)) if m.group(2) != "0" else None
            continue
        m = re.match(r"^(Size|Rss):\s+(\d+) kB", line)
        if m and key:
            d = size if m.group(1) == "Size" else rss
            d[key] = d.get(key, 0) + int(m.group(2))
    return size, rss


def guest_file_in_smaps(text, mem_bytes):
    """(device, inode) of the file whose mappings add up to the guest memory
    size in a smaps text, or None."""
    size, _ = _file_totals(text)
    return next((k for k, s in size.items() if s * 1024 == mem_bytes), None)


def device_process_private_kib(runner, guest_file):
    """KiB only the split monitor's device process holds: the private pages
    (Private_Clean + Private_Dirty in /proc/PID/smaps) of its children named
    cloak-devices, guest memory (of guest_file) left out. What it shares
    with the runner (the binary, pages not written since the fork) is in the
    runner's RSS already. 0 without such a child; None if unreadable."""
    try:
        with open("/proc/%d/task/%d/children" % (runner, runner)) as f:
            kids = [int(x) for x in f.read().split()]
    except OSError:
        return None
    total = 0
    for kid in kids:
        try:
            with open("/proc/%d/comm" % kid) as f:
                if f.read().strip() != "cloak-devices":
                    continue
            with open("/proc/%d/smaps" % kid) as f:
                text = f.read()
        except OSError:
            return None
        key = None
        for line in text.splitlines():
            m = re.match(r"^[0-9a-f]+-[0-9a-f]+ \S+ \S+ (\S+) (\d+)", line)
            if m:
                key = (m.group(1), m.group(2))
                continue
            m = re.match(r"^Private_(Clean|Dirty):\s+(\d+) kB", line)
            if m and key != guest_file:
                total += int(m.group(2))
    return total


def guest_pages_in_smaps(text, mem_bytes):
    """KiB resident in the file (device and inode) whose mappings add up to
    the guest memory size: guest memory may be split into several mappings
    (different protections), all of one file. None if there is no such file."""
    key = guest_file_in_smaps(text, mem_bytes)
    return None if key is None else _file_totals(text)[1].get(key, 0)


# --------------------------------------------------- boot-time breakdown

# A phase starts at a marker: the entry of the first syscall matching a
# pattern ("at"), or the return of the first (or last) one ("after",
# "after-last"), searched from the previous phase's start. Phases are in
# the order the monitor makes them; a marker that is not seen merges its
# phase into the one before and is reported as such. {mem} is replaced by
# the guest memory size in bytes.
EXEC = "exec, loader (Solo5: dynamic; cloak: static-pie, none), libc start-up"
# The phases that start at the same call in both monitors, each written once:
# the breakdown lines the monitors' columns up by a phase's name.
AT_EXEC = (EXEC, "at", r"^execve\(")
KVM_OPEN = ("KVM: open /dev/kvm, create VM", "at", r'^openat\(.*"/dev/kvm"')
MEMSLOT = ("memslot (KVM_SET_USER_MEMORY_REGION)", "at", r"KVM_SET_USER_MEMORY_REGION")
VCPU = ("vCPU: create, map its run structure", "at", r"KVM_CREATE_VCPU")
CPUID = ("CPUID: KVM_GET_SUPPORTED_CPUID, filter, KVM_SET_CPUID2", "at", r"KVM_GET_SUPPORTED_CPUID")
GUEST_RUN = ("guest run: runtime start-up and calls (KVM_RUN and exits)", "at", r"KVM_RUN")

CLOAK_PHASES = [
    AT_EXEC,
    ("options, signal handlers", "at", r"^fcntl\(0, F_GETFD"),
    ("guest image read and check", "at", r"^openat\(.*O_NONBLOCK"),
    KVM_OPEN,
    ("guest memory backend: choice, creation, memlock and capability checks, mapping",
     "at", r"^(memfd_secret|memfd_create)\(|KVM_CREATE_GUEST_MEMFD"),
    ("start-up probe: GUP refusal (process_vm_readv)", "at", r"^process_vm_readv\("),
    ("ELF load into guest memory (page faults)", "after", r"^process_vm_readv\("),
    MEMSLOT,
    VCPU,
    CPUID,
    ("page tables, GDT, TSS (page faults)", "after", r"KVM_SET_CPUID2"),
    ("registers, TSC frequency", "at", r"KVM_GET_SREGS"),
    ("boot info, devices, console, watchdog", "after", r"KVM_GET_TSC_KHZ"),
    ("sandbox: libseccomp probes, filter build, load", "at", r"^(seccomp|prctl\(PR_SET_NO_NEW_PRIVS)"),
    GUEST_RUN,
    ("teardown: close vCPU and VM", "after-last", r"KVM_RUN"),
    ("wipe of guest memory (PAGEMAP_SCAN, pagemap, SEEK_DATA or cachestat)", "at",
     r"^ioctl\(\d+, (PAGEMAP_SCAN|_IOC\(_IOC_READ\|_IOC_WRITE, 0x66, 0x10)|^(pread64|lseek|cachestat|syscall_0x1c3)\("),
    ("unmap guest memory, exit", "at", r"^munmap\(0x[0-9a-f]+, {mem}\)"),
]

SOLO5_PHASES = [
    AT_EXEC,
    ("options, guest image read and check", "after", r"^munmap\("),
    KVM_OPEN,
    VCPU,
    ("guest memory backend: choice, creation, memlock and capability checks, mapping",
     "at", r"^mmap\(NULL, {mem},"),
    MEMSLOT,
    ("ELF load into guest memory (page faults)", "after", r"KVM_SET_USER_MEMORY_REGION"),
    CPUID,
    ("registers, TSC frequency", "after", r"KVM_SET_CPUID2"),
    ("boot info, devices, console, watchdog", "at", r"^epoll_create1\("),
    ("sandbox: libseccomp probes, filter build, load", "at", r"^(personality|seccomp)\("),
    GUEST_RUN,
    ("teardown at exit_group: the kernel frees VM and memory", "at", r"^exit_group\("),
]

TRUE_PHASES = [AT_EXEC]

LINE = re.compile(r"^(\d+)\s+(\d+\.\d+)\s+(.*?)(?:\s+<(\d+\.\d+)>)?$")


def parse_trace(path):
    """[(start s, duration s, text)] of the traced command's own syscalls,
    and the time its exit was seen."""
    calls, end, main = [], None, None
    with open(path) as f:
        for line in f:
            m = LINE.match(line.rstrip("\n"))
            if not m:
                continue
            pid, ts, text, dur = int(m.group(1)), float(m.group(2)), m.group(3), m.group(4)
            main = pid if main is None else main
            if pid != main:
                continue
            if text.startswith("+++ exited"):
                end = ts
            elif not text.startswith("---"):
                calls.append((ts, float(dur) if dur else 0.0, text))
    return calls, end if end is not None else (calls[-1][0] if calls else 0.0)


def tracer_cost(calls):
    """What the tracer adds to each syscall: the 10th percentile of the time
    from one syscall's entry to the next (back-to-back trivial syscalls,
    whose own cost is well under a microsecond natively)."""
    gaps = [b[0] - a[0] for a, b in zip(calls, calls[1:])]
    return percentile(gaps, 10) if gaps else 0.0


def phases_of(calls, end, spec, mem):
    """{row: (µs corrected for the tracer, syscalls)}, [rows not seen],
    and the KVM_RUN statistics (count, µs inside, µs of the first)."""
    cost = tracer_cost(calls)
    bounds = []  # (row, start time, first call index)
    pos = 0
    missing = []
    for row, kind, pat in spec:
        rx = re.compile(pat.replace("{mem}", str(mem)))
        hits = [i for i in range(pos, len(calls)) if rx.search(calls[i][2])]
        if not hits:
            missing.append(row)
            continue
        i = hits[-1] if kind == "after-last" else hits[0]
        if kind == "at":
            bounds.append((row, calls[i][0], i))
            pos = i
        else:
            bounds.append((row, calls[i][0] + calls[i][1], i + 1))
            pos = i + 1
    out = {}
    for k, (row, t0, i0) in enumerate(bounds):
        t1, i1 = (bounds[k + 1][1], bounds[k + 1][2]) if k + 1 < len(bounds) else (end, len(calls))
        n = max(0, i1 - i0)
        us = max(0.0, (t1 - t0) - n * cost) * 1e6
        a, b = out.get(row, (0.0, 0))
        out[row] = (a + us, b + n)
    runs = [c for c in calls if "KVM_RUN" in c[2]]
    kvm = (len(runs), sum(max(0.0, c[1] - cost) for c in runs) * 1e6,
           max(0.0, runs[0][1] - cost) * 1e6 if runs else 0.0)
    return out, [m for m in missing if m not in out], kvm


def syscall_key(text):
    """'ioctl KVM_RUN', 'munmap', ...: what a syscall's time is summed under."""
    m = re.match(r"ioctl\(\d+, (KVM_\w+)", text)
    if m:
        return "ioctl " + m.group(1)
    return text.split("(", 1)[0]


def trace_breakdown(cmd, spec, mem, runs):
    """Medians over `runs` traced runs of cmd (strace -f -ttt -T):
    {"rows": {row: (µs, syscalls)}, "missing": [rows], "kvm": (exits, µs in
    KVM_RUN, µs of the first), "calls": {syscall key: µs inside}}."""
    per_row, kvm_stats, missing, per_call = {}, [], set(), {}
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "trace")
        for k in range(runs + 1):  # run 0 warms up and is discarded
            r = subprocess.run(["strace", "-f", "-q", "-ttt", "-T", "-o", out] + cmd,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               timeout=120)
            if r.returncode:
                raise SystemExit("strace %s failed (exit %d): %s" % (" ".join(cmd), r.returncode,
                                                                      r.stderr[-300:]))
            calls, end = parse_trace(out)
            rows, miss, kvm = phases_of(calls, end, spec, mem)
            if k == 0:
                continue
            missing.update(miss)
            kvm_stats.append(kvm)
            for row, (us, n) in rows.items():
                per_row.setdefault(row, []).append((us, n))
            sums = {}
            for _, dur, text in calls:
                key = syscall_key(text)
                sums[key] = sums.get(key, 0.0) + dur * 1e6
            for key in set(per_call) | set(sums):
                per_call.setdefault(key, []).append(sums.get(key, 0.0))
    return {
        "rows": {row: (median([u for u, _ in v]), int(median([n for _, n in v])))
                 for row, v in per_row.items()},
        "missing": sorted(missing),
        "kvm": tuple(median([k[i] for k in kvm_stats]) for i in range(3)),
        "calls": {key: median(v + [0.0] * (runs - len(v))) for key, v in per_call.items()},
    }

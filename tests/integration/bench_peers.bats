#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The comparison benchmark (bench/peers-bench): what it computes from its
# measurements, and that without a peer build it says so instead of
# printing peer figures. (Benchmarks are not timed here: these tests check
# the bench's logic and honesty, not speed.)
bats_require_minimum_version 1.5.0
load helpers

BENCH=$ROOT/bench

lib() {
	python3 -c "import sys; sys.path.insert(0, '$BENCH'); import benchlib as B
$1"
}

@test "statistics: median, ratio of medians, verdicts at the limit and without a peer" {
	run lib '
assert B.median([3, 1, 2]) == 2 and B.median([4, 1, 2, 3]) == 2.5
v, text = B.ratio([2.0, 4.0, 6.0], [1.0, 2.0, 3.0])
assert v == 2.0 and text.startswith("2.00x"), text
assert B.ratio([1.0], []) == (None, "absent")
assert B.verdict(0.5, 0.5) == "**met**" and B.verdict(0.51, 0.5) == "**missed**"
assert B.verdict(2.0, 2.0, at_most=False) == "**met**"
assert B.verdict(1.99, 2.0, at_most=False) == "**missed**"
assert B.verdict(None, 0.5).startswith("not measured")
print("ok")'
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[ "$output" = ok ]
}

@test "guest pages: all mappings of the file that holds guest memory, nothing else" {
	# Guest memory split into three mappings of one file (as a tender that
	# write-protects part of it has), beside a heap and a 64 MiB anonymous
	# mapping that is not a file.
	run lib '
smaps = """\
55a000000000-55a000021000 rw-p 00000000 00:00 0 [heap]
Size:                132 kB
Rss:                  24 kB
7f0000000000-7f0000100000 rw-s 00000000 00:01 1043 /dev/zero (deleted)
Size:               1024 kB
Rss:                  36 kB
7f0000100000-7f0000106000 r--s 00100000 00:01 1043 /dev/zero (deleted)
Size:                 24 kB
Rss:                  24 kB
7f0000106000-7f0004000000 rw-s 00106000 00:01 1043 /dev/zero (deleted)
Size:              64488 kB
Rss:                  20 kB
7f1000000000-7f1004000000 rw-p 00000000 00:00 0
Size:              65536 kB
Rss:                 900 kB
"""
print(B.guest_pages_in_smaps(smaps, 64 << 20), B.guest_pages_in_smaps(smaps, 32 << 20))'
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[ "$output" = "80 None" ]
}

@test "boot breakdown: a phase runs from its marker to the next, less the tracer's cost per syscall" {
	# Syscalls 10 µs apart (the tracer's cost) except where the monitor
	# works: 1000 µs of options and signal handlers, a 300 µs
	# KVM_CREATE_VM, a 40 µs process_vm_readv followed by 210 µs of ELF
	# load (an "after" marker: the phase starts at its return), 500 µs from
	# the unmap of guest memory to the exit. No memslot or vCPU: those
	# phases are reported as not seen.
	run lib '
T = [(0, 0, "execve(\"x\") = 0"), (10, 0, "brk(NULL) = 0x1"), (20, 0, "fcntl(0, F_GETFD) = 0"),
     (1020, 0, "openat(AT_FDCWD, \"g.elf\", O_RDONLY|O_NONBLOCK|O_CLOEXEC) = 3"),
     (1030, 0, "openat(AT_FDCWD, \"/dev/kvm\", O_RDWR) = 3"),
     (1040, 300, "ioctl(3, KVM_CREATE_VM, 0) = 4"), (1350, 0, "memfd_secret(O_CLOEXEC) = 5"),
     (1360, 40, "process_vm_readv(1, [], 1, [], 1, 0) = -1 EFAULT"),
     (1610, 0, "munmap(0x7f0000000000, 67108864) = 0"), (1620, 0, "exit_group(0) = ?")]
calls = [(t / 1e6, d / 1e6, s) for t, d, s in T]
rows, missing, kvm = B.phases_of(calls, 2120 / 1e6, B.CLOAK_PHASES, 64 << 20)
r = {k: round(v[0]) for k, v in rows.items()}
assert r[B.EXEC] == 0, r
assert r["options, signal handlers"] == 990, r
assert r["KVM: open /dev/kvm, create VM"] == 300, r
assert r["start-up probe: GUP refusal (process_vm_readv)"] == 30, r
assert r["ELF load into guest memory (page faults)"] == 210, r
assert r["unmap guest memory, exit"] == 490, r
assert "memslot (KVM_SET_USER_MEMORY_REGION)" in missing, missing
assert "vCPU: create, map its run structure" in missing, missing
assert kvm == (0, 0, 0), kvm
print("ok")'
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[ "$output" = ok ]
}

@test "an incomplete SOLO5_DIR is named with the file it lacks, and no peer is used" {
	mkdir -p "$BATS_TEST_TMPDIR/s5/tenders/hvt"
	printf '#!/bin/sh\n' >"$BATS_TEST_TMPDIR/s5/tenders/hvt/solo5-hvt"
	chmod +x "$BATS_TEST_TMPDIR/s5/tenders/hvt/solo5-hvt"
	SOLO5_DIR=$BATS_TEST_TMPDIR/s5 run lib 'p, why = B.find_solo5(); print(p, why)'
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ "$output" == "None SOLO5_DIR=$BATS_TEST_TMPDIR/s5 lacks "*"tests/test_hello/test_hello.hvt"* ]]
	[[ "$output" != *"tenders/hvt/solo5-hvt"* ]]
	SOLO5_DIR= run lib 'print(B.find_solo5())'
	[ "$output" = "(None, 'SOLO5_DIR is not set')" ]
}

@test "without a Solo5 build the bench says the peer figures are absent and prints none" {
	need_kvm
	# The bench boots the default backend; a run that selected one for the
	# suites (the SVM tier, whose benchmarks are make bench-svm) skips it.
	[ -z "${CLOAK_TEST_MEMORY:-}" ] || skip "the bench runs the default backend; this run tests --memory=$CLOAK_TEST_MEMORY"
	cd "$ROOT"
	SOLO5_DIR= PEERS_BOOT_ROUNDS=2 PEERS_CALL_ROUNDS=1 PEERS_BLOCK_ROUNDS=1 PEERS_RSS_ROUNDS=1 \
		PEERS_TRACE_RUNS=1 PEERS_PHASE_RUNS=1 run timeout 300 bench/peers-bench
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ "$output" == *"**Peer figures absent: SOLO5_DIR is not set.**"* ]]
	[[ "$output" != *"Peer: Solo5"* ]]
	# cloak's own figures are there, the peer's column says absent
	printf '%s\n' "$output" | grep -Eq '^\| empty \(main returns 0; protected, the default backend\) \| [0-9.]+ \([0-9.]+–[0-9.]+\) \| absent \| absent \|'
	# every target that needs the peer is unjudged; the cloak-only one is judged
	[ "$(printf '%s\n' "$output" | grep -c 'not measured (peer absent) |$')" -ge 5 ]
	printf '%s\n' "$output" | grep -Eq '^\| poll with nothing to wait for ≤ 1.5x a bare exit \(cloak\) \| [0-9.]+x \| \*\*(met|missed)\*\* \|$'
	# the breakdown has cloak's column only
	printf '%s\n' "$output" | grep -q '^| phase | cloak | cloak --memory=shared |$'
	# the monitor names its own phases (CLOAK_TEST_PHASES), the sandbox's among them
	printf '%s\n' "$output" | grep -q '^| phase (ends with) | cloak | cloak --memory=shared |$'
	printf '%s\n' "$output" | grep -Eq '^\| sandbox entered \| [0-9.]+ \([0-9.]+–[0-9.]+\) \| [0-9.]+ '
	printf '%s\n' "$output" | grep -Eq '^\| guest memory wiped \| [0-9.]+ '
}

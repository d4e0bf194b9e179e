#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# make bench on a host without /dev/kvm (bench/run-benches): the benchmarks
# that boot guests are left out in one line naming make bench-svm, the rest
# run, and the run exits 0.
bats_require_minimum_version 1.5.0
load helpers

setup() {
	T=$BATS_TEST_TMPDIR
	for b in host-bench kvm-bench; do
		printf '#!/bin/sh\necho "%s ran"\n' "$b" >"$T/$b"
		chmod +x "$T/$b"
	done
}

# in_no_kvm CMD...: runs CMD where /dev is a tmpfs with /dev/null only.
in_no_kvm() {
	need_cmd unshare util-linux
	run unshare --mount sh -c 'mount -t tmpfs none /dev && mknod -m 666 /dev/null c 1 3 && exec "$@"' sh "$@"
	if [[ "$output" == *"mount"*"ermission"* || "$output" == *"unshare failed"* ]]; then
		skip "cannot create a mount namespace here"
	fi
}

@test "without /dev/kvm, run-benches runs the host's benchmarks, names the others and make bench-svm, and exits 0" {
	in_no_kvm env CLOAK_KVM_BENCHES="bench/other $T/kvm-bench" "$ROOT/bench/run-benches" "$T/host-bench" "$T/kvm-bench"
	[ "$status" -eq 0 ] || { echo "$status: $output"; return 1; }
	[[ "$output" == *"host-bench ran"* ]] || { echo "$output"; return 1; }
	[[ "$output" != *"kvm-bench ran"* ]] || { echo "$output"; return 1; }
	[ "$(grep -c 'no /dev/kvm' <<<"$output")" -eq 1 ] || { echo "$output"; return 1; }
	[[ "$output" == *"# no /dev/kvm on this host: not run here, as they boot guests: kvm-bench; make bench-svm runs them"* ]] ||
		{ echo "$output"; return 1; }
}

@test "without /dev/kvm, a failing host benchmark still fails the run" {
	printf '#!/bin/sh\nexit 3\n' >"$T/host-bench"
	in_no_kvm env CLOAK_KVM_BENCHES="$T/kvm-bench" "$ROOT/bench/run-benches" "$T/host-bench" "$T/kvm-bench"
	[ "$status" -eq 1 ] || { echo "$status: $output"; return 1; }
	[[ "$output" == *"# $T/host-bench failed (exit 3)"* ]] || { echo "$output"; return 1; }
}

@test "with /dev/kvm, run-benches runs every benchmark" {
	[ -c /dev/kvm ] || skip "no /dev/kvm here (the test above covers that)"
	CLOAK_KVM_BENCHES="$T/kvm-bench" run "$ROOT/bench/run-benches" "$T/host-bench" "$T/kvm-bench"
	[ "$status" -eq 0 ] || { echo "$status: $output"; return 1; }
	[[ "$output" == *"kvm-bench ran"* ]] || { echo "$output"; return 1; }
	[[ "$output" != *"no /dev/kvm"* ]] || { echo "$output"; return 1; }
}

@test "make bench without /dev/kvm: exit 0, and the guest-booting benchmarks left out by name" {
	# make's own wiring (bench/build.mk hands KVM_BENCHES to run-benches),
	# with stand-in benchmarks; -o all: the build is there already (and
	# read-only in the SVM tier).
	in_no_kvm make -s -o all -C "$ROOT" O="$O" bench BENCHES="$T/host-bench $T/kvm-bench" KVM_BENCHES="$T/kvm-bench"
	[ "$status" -eq 0 ] || { echo "$status: $output"; return 1; }
	[[ "$output" == *"host-bench ran"* ]] || { echo "$output"; return 1; }
	[[ "$output" == *"not run here, as they boot guests: kvm-bench; make bench-svm runs them"* ]] || { echo "$output"; return 1; }
}

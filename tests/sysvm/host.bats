#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The system VM suite's own logic, on the host (no VM, no network): what
# check-sysvm does when it cannot run (SKIP with the reason, or FAILED
# under CLOAK_REQUIRE_KVM=1, as CI sets it), and that building its image
# needs root.
bats_require_minimum_version 1.5.0
load ../integration/helpers

setup() {
	T=$BATS_TEST_TMPDIR
	mkdir -p "$T/debs"
	: >"$T/debs/cloak_0_amd64.deb"
}

@test "check-sysvm without QEMU: SKIP with the reason, or FAILED under CLOAK_REQUIRE_KVM=1" {
	CLOAK_REQUIRE_KVM=0 SVM_QEMU=no-such-qemu run "$ROOT/tests/sysvm/run-sysvm" "$T/debs"
	[ "$status" -eq 0 ]
	[ "$output" = "check-sysvm: SKIP: no-such-qemu not found; install Debian's qemu-system-x86 (apt-get install qemu-system-x86, or make: .ci/packages)" ] ||
		{ echo "$output"; return 1; }
	CLOAK_REQUIRE_KVM=1 SVM_QEMU=no-such-qemu run "$ROOT/tests/sysvm/run-sysvm" "$T/debs"
	[ "$status" -eq 1 ]
	[[ "$output" == "check-sysvm: FAILED: no-such-qemu not found; "*"(CLOAK_REQUIRE_KVM=1)" ]] || { echo "$output"; return 1; }
}

@test "check-sysvm with no packages to test: SKIP with the reason, or FAILED under CLOAK_REQUIRE_KVM=1" {
	need_cmd qemu-system-x86_64 qemu-system-x86
	need_cmd busybox busybox-static
	mkdir "$T/none"
	CLOAK_REQUIRE_KVM=0 run "$ROOT/tests/sysvm/run-sysvm" "$T/none"
	[ "$status" -eq 0 ]
	[ "$output" = "check-sysvm: SKIP: no .deb files in $T/none: build the packages first" ] || { echo "$output"; return 1; }
	CLOAK_REQUIRE_KVM=1 run "$ROOT/tests/sysvm/run-sysvm" "$T/none"
	[ "$status" -eq 1 ]
	[[ $output == "check-sysvm: FAILED: no .deb files in $T/none"* ]] || { echo "$output"; return 1; }
}

@test "check-sysvm without a kernel to boot: SKIP with the reason, or FAILED under CLOAK_REQUIRE_KVM=1" {
	need_cmd qemu-system-x86_64 qemu-system-x86
	need_cmd busybox busybox-static
	printf 'deb http://a.example/debian bullseye main\n' >"$T/sources.list"
	export CLOAK_SVM_CACHE=$T/cache SVM_APT_SOURCES=$T/sources.list SVM_CODENAME=bookworm O=$T/build
	CLOAK_REQUIRE_KVM=0 run "$ROOT/tests/sysvm/run-sysvm" "$T/debs"
	[ "$status" -eq 0 ]
	[[ "$output" == "check-sysvm: SKIP: no 7 kernel: fetch-kernel: cannot derive an apt entry for trixie-backports from $T/sources.list"* ]] ||
		{ echo "$output"; return 1; }
	CLOAK_REQUIRE_KVM=1 run "$ROOT/tests/sysvm/run-sysvm" "$T/debs"
	[ "$status" -eq 1 ]
	[[ "$output" == "check-sysvm: FAILED: no 7 kernel: "* ]] || { echo "$output"; return 1; }
}

@test "building the image needs root: make-image says so in one line, before any work" {
	need_cmd setpriv util-linux
	mkdir -p "$T/k"
	echo "7.0.0-1-amd64 7.0.0-1" >"$T/k/version"
	chmod -R a+rX "$T"
	if [ "$(id -u)" = 0 ]; then
		# As nobody, who must reach the tree: a clone in a 0700 directory
		# (mktemp -d) keeps nobody out before make-image could say a word.
		setpriv --reuid=nobody --regid=nogroup --clear-groups test -x "$ROOT/tests/sysvm/make-image" ||
			skip "nobody cannot reach $ROOT (a directory above it is closed to others)"
		run setpriv --reuid=nobody --regid=nogroup --clear-groups env CLOAK_SVM_CACHE="$T/cache" "$ROOT/tests/sysvm/make-image" "$T/k"
	else
		CLOAK_SVM_CACHE=$T/cache run "$ROOT/tests/sysvm/make-image" "$T/k"
	fi
	[ "$status" -eq 1 ]
	[ "$output" = "make-image: building the image needs root (debootstrap, chroot, mount)" ] || { echo "$output"; return 1; }
	[ ! -e "$T/cache" ]
}

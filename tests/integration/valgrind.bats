#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The monitor under valgrind: no invalid access, no leak. valgrind knows
# neither memfd_secret nor seccomp, so these runs use --memory=shared and
# --no-sandbox; the code paths are otherwise the same. valgrind checks
# malloc and free only in a dynamically linked program: these runs use the
# monitor's dynamic twin (the same objects as $O/cloak, which is static).
load helpers
VG_CLOAK=${CLOAK_BIN:-$ROOT/$O/tests/cloak-dynamic}

vg() {
	need_cmd valgrind valgrind
	run timeout 120 valgrind -q --leak-check=full --show-leak-kinds=definite,indirect \
		--errors-for-leak-kinds=definite,indirect --error-exitcode=99 \
		"$VG_CLOAK" --no-sandbox --memory=shared "$@"
}

@test "valgrind: hello boots clean" {
	need_kvm
	vg "$HELLO" -- a b
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ "$output" == *"Hello from a cloak guest!"* ]]
}

@test "valgrind: hostile hypercalls are handled clean" {
	need_kvm
	vg "$GUESTS/hostile.elf" errors
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	vg "$GUESTS/hostile.elf" block_outside
	[ "$status" -eq 253 ] || { echo "$output"; return 1; }
}

@test "valgrind: guest exception and watchdog paths are clean" {
	need_kvm
	vg "$GUESTS/trap.elf" ud
	[ "$status" -eq 255 ] || { echo "$output"; return 1; }
	vg --timeout=1 "$GUESTS/trap.elf" spin
	[ "$status" -eq 252 ] || { echo "$output"; return 1; }
}

#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The monitor under valgrind: no invalid access, no leak. valgrind knows
# neither memfd_secret nor seccomp, so these runs use --memory=shared and
# --no-sandbox; the code paths are otherwise the same.
load helpers

vg() {
	need_cmd valgrind valgrind
	run timeout 120 valgrind -q --leak-check=full --show-leak-kinds=definite,indirect \
		--errors-for-leak-kinds=definite,indirect --error-exitcode=99 \
		"$CLOAK_REAL" --no-sandbox --memory=shared "$@"
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

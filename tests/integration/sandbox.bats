#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The sandbox, from inside: the test build of the monitor (test_hooks.h)
# tries, once the guest runs, the system calls a compromised monitor would
# want; each must be refused while the guest goes on. And the monitor's own
# crash path: a fault in the monitor still wipes and exits 248.
bats_require_minimum_version 1.5.0
load helpers

HOOKS=$ROOT/$O/tests/cloak-hooks
FORBIDDEN="open openat socket-inet socket-unix connect ptrace mmap-exec mprotect-exec
memfd_create fork execve unlink prctl-dumpable process_vm_readv kill ioctl-create-vcpu
ioctl-memslot ioctl-guest-debug mremap"

@test "once the guest runs, every forbidden system call is refused, and the guest runs on" {
	need_kvm
	run timeout 60 env CLOAK_TEST_HOOK=sandbox-probe "$HOOKS" "${MEMORY_ARGS[@]}" "$HELLO"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ "$output" == *"sandbox: probe done"* ]]
	[[ "$output" == *"Hello from a cloak guest!"* ]]
	[[ "$output" == *"memory protection on"* ]]
	for c in $FORBIDDEN; do
		[[ "$output" == *"sandbox: $c refused EPERM"* ]] || { echo "$c: $output"; return 1; }
	done
	[[ "$output" != *"ALLOWED"* ]]
}

@test "control: without the sandbox the same probe gets through" {
	need_kvm
	run timeout 60 env CLOAK_TEST_HOOK=sandbox-probe "$HOOKS" "${MEMORY_ARGS[@]}" --no-sandbox "$HELLO"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	for c in open openat socket-unix mmap-exec memfd_create fork prctl-dumpable kill ioctl-guest-debug mremap; do
		[[ "$output" == *"sandbox: $c ALLOWED"* ]] || { echo "$c: $output"; return 1; }
	done
}

@test "the shipped monitor has no test hooks" {
	run -1 grep -c CLOAK_TEST_HOOK "$ROOT/$O/cloak"
	run -1 grep -c CLOAK_TEST_PHASES "$ROOT/$O/cloak"
}

# The named phases bench/peers-bench prints come from here (test_hooks.h).
@test "CLOAK_TEST_PHASES=1: the test monitor names each phase of a run with its time" {
	need_kvm
	run --separate-stderr timeout 60 env CLOAK_TEST_PHASES=1 "$HOOKS" -q "${MEMORY_ARGS[@]}" "$HELLO"
	[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
	local p
	for p in "options parsed" "signal handlers" "KVM open" "guest memory created" "image loaded" \
		"vCPU set up" "sandbox entered" "guest run (KVM_RUN to its exit)" "VM closed" \
		"guest memory wiped" "guest memory unmapped"; do
		grep -qxE "phase ${p//[()]/.} [0-9]+\.[0-9]" <<<"$stderr" || { echo "no '$p': $stderr"; return 1; }
	done
	# without the variable, nothing
	run --separate-stderr timeout 60 "$HOOKS" -q "${MEMORY_ARGS[@]}" "$HELLO"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ] || { echo "$stderr"; return 1; }
}

@test "a fault in the monitor itself: one line, guest memory wiped, exit 248" {
	need_kvm
	# A witness process keeps a view of the (shared-backend) guest memory
	# and looks once the monitor is gone (test_hooks.c).
	run timeout 60 env CLOAK_TEST_HOOK=fault "$HOOKS" --no-sandbox --memory=shared "$HELLO"
	[ "$status" -eq 248 ] || { echo "$status: $output"; return 1; }
	[ "$(grep -c '^cloak: ' <<<"$output")" -eq 1 ]
	[[ "$output" == *"cloak: internal error: the monitor faulted; guest memory wiped, exiting"* ]]
	[[ "$output" == *"witness: 0 pages hold data after the monitor ended"* ]] || { echo "$output"; return 1; }
}

@test "the monitor's own abort(): one line, guest memory wiped, exit 248" {
	need_kvm
	run timeout 60 env CLOAK_TEST_HOOK=abort "$HOOKS" --no-sandbox --memory=shared "$HELLO"
	[ "$status" -eq 248 ] || { echo "$status: $output"; return 1; }
	[ "$(grep -c '^cloak: ' <<<"$output")" -eq 1 ] || { echo "$output"; return 1; }
	[[ "$output" == *"cloak: internal error: the monitor faulted; guest memory wiped, exiting"* ]]
	[[ "$output" == *"witness: 0 pages hold data after the monitor ended"* ]] || { echo "$output"; return 1; }
}

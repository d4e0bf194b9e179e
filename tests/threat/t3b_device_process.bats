#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Threat 3b, a compromised monitor, on every kind of host: the code that
# faces the host (calls, devices, channels) runs in a device process apart
# from the vCPU runner (docs/design.md, "Two processes"). It maps only the
# pages shared at PROTECT, holds no KVM or guest-memory descriptor, cannot
# get one in its sandbox, and the runner treats its replies as hostile.
bats_require_minimum_version 1.5.0
load threat_helpers

HOOKS=$ROOT/$O/tests/cloak-hooks

# device_of PID: the device process of the runner PID (its child named
# cloak-devices; the path broker, its other child, is another).
device_of() {
	local d
	d=$(pgrep -P "$1" -x cloak-devices) || { echo "runner $1 has no device process"; return 1; }
	[ "$(wc -w <<<"$d")" -eq 1 ] || { echo "device processes: $d"; return 1; }
	DEV_PID=$d
}

# start_with_device CLOAK-OPTIONS...: threat_secret.elf started with those
# options (start_guest; the runner in $MON_PID), and its device process
# found (device_of; in $DEV_PID), or the guest stopped and a failure.
start_with_device() {
	start_guest -- "$@" "$GUESTS/threat_secret.elf" "$TOKEN" 30
	device_of "$MON_PID" || { stop_guest; return 1; }
}

# signal_device SIGNAL STATUS: SIGNAL to the device process alone; fails
# unless the runner then exits with STATUS, having wiped guest memory.
signal_device() {
	kill "-$1" "$DEV_PID"
	GUEST_STATUS=0
	wait "$MON_PID" || GUEST_STATUS=$?
	[ "$GUEST_STATUS" -eq "$2" ] || { echo "status $GUEST_STATUS: $(cat "$GUEST_OUT")"; return 1; }
	grep -q 'guest memory wiped:' "$GUEST_OUT" || { cat "$GUEST_OUT"; return 1; }
}

# shared_pages: pages shared at PROTECT, from the runner's -v line.
shared_pages() {
	sed -n 's/.*guest enabled memory protection (\([0-9]*\) pages shared).*/\1/p' "$GUEST_OUT"
}

# guest_mapped PID: bytes of guest memory mapped in PID (memfd, secretmem
# or guest_memfd mappings of the guest's own file).
guest_mapped() {
	local range rest total=0
	while read -r range rest; do
		[[ "$rest" =~ cloak-guest|secretmem|kvm-gmem ]] || continue
		total=$((total + 16#${range#*-} - 16#${range%-*}))
	done <"/proc/$1/maps"
	echo "$total"
}

@test "a secret written after PROTECT is in no mapping of the device process; the runner's show it (control)" {
	need_kvm; need_root
	new_token
	# Shared memory: the runner's mapping can be read, so the control
	# can find the secret there.
	start_with_device -v --memory=shared
	run "$PROBE" "$DEV_PID" "CLOAK-THREAT-$REV-SECRET" all-procmem
	local dev=$output
	run "$PROBE" "$MON_PID" "CLOAK-THREAT-$REV-SECRET" all-procmem
	local runner=$output
	local mapped shared
	mapped=$(guest_mapped "$DEV_PID")
	shared=$(shared_pages)
	stop_guest
	[[ "$dev" == *"all-procmem: "*"needle not found"* ]] || { echo "device: $dev"; return 1; }
	[[ "$runner" == *"all-procmem: "*"needle found"* ]] || { echo "runner: $runner"; return 1; }
	# What the device process maps of guest memory is the shared pages,
	# not a page more.
	[ "$mapped" -gt 0 ] || { echo "the device process maps no guest memory"; return 1; }
	[ -n "$shared" ] || { cat "$GUEST_OUT"; return 1; }
	[ "$mapped" -le $((shared * 4096)) ] || { echo "$mapped bytes mapped, $shared pages shared"; return 1; }
	[ "$GUEST_STATUS" -eq 240 ] || { echo "status $GUEST_STATUS"; return 1; }
}

@test "with the host's default backend the device process holds no private page either" {
	need_kvm; need_root
	local backend
	backend=$(auto_backend)
	[ "$backend" != none ] || skip "no protected backend runs on this host"
	new_token
	start_with_device -v --memory="$backend"
	run "$PROBE" "$DEV_PID" "CLOAK-THREAT-$REV-SECRET" all-procmem
	local mapped shared
	mapped=$(guest_mapped "$DEV_PID")
	shared=$(shared_pages)
	stop_guest
	[[ "$output" == *"all-procmem: "*"needle not found"* ]] || { echo "$output"; return 1; }
	[ "$mapped" -le $((shared * 4096)) ] || { echo "$mapped bytes mapped, $shared pages shared"; return 1; }
}

@test "control: in one process (--no-device-isolation) the same scan of the monitor finds the secret" {
	need_kvm; need_root
	new_token
	start_guest -- --no-device-isolation --memory=shared "$GUESTS/threat_secret.elf" "$TOKEN" 30
	local kids
	kids=$(pgrep -P "$MON_PID" -x cloak-devices || true)
	run "$PROBE" "$MON_PID" "CLOAK-THREAT-$REV-SECRET" all-procmem
	stop_guest
	[ -z "$kids" ] || { echo "a device process: $kids"; return 1; }
	[[ "$output" == *"needle found"* ]] || { echo "$output"; return 1; }
}

@test "the device process holds no KVM, VM, vCPU or guest-memory descriptor; the runner does (control)" {
	need_kvm; need_root
	local backend
	backend=$(auto_backend)
	[ "$backend" != none ] || backend=shared
	new_token
	start_with_device --memory="$backend"
	local dev runner
	dev=$(find "/proc/$DEV_PID/fd" -mindepth 1 -exec readlink {} \; 2>/dev/null)
	runner=$(find "/proc/$MON_PID/fd" -mindepth 1 -exec readlink {} \; 2>/dev/null)
	stop_guest
	local kvm='/dev/kvm|kvm-vm|kvm-vcpu|kvm-gmem|guest_memfd|secretmem|memfd:cloak-guest'
	if grep -E "$kvm" <<<"$dev"; then
		echo "device process descriptors: $dev"; return 1
	fi
	grep -q 'kvm-vcpu' <<<"$runner" || { echo "runner: $runner"; return 1; }
	grep -q 'kvm-vm' <<<"$runner" || { echo "runner: $runner"; return 1; }
}

@test "the device process's sandbox refuses /dev/kvm, every ioctl and mapping a descriptor; control without it" {
	need_kvm
	run timeout 60 env CLOAK_TEST_HOOK=sandbox-probe-devices "$HOOKS" "${MEMORY_ARGS[@]}" "$HELLO"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	local c
	for c in open-dev-kvm openat ioctl mmap-fd memfd_create pidfd_open process_vm_readv \
		ptrace mremap; do
		[[ "$output" == *"sandbox: $c refused EPERM"* ]] || { echo "$c: $output"; return 1; }
	done
	# Anonymous memory (malloc) still works, and the guest runs on.
	[[ "$output" == *"sandbox: malloc-mmap ALLOWED"* ]] || { echo "$output"; return 1; }
	[[ "$output" == *"Hello from a cloak guest"* ]] || { echo "$output"; return 1; }
	# Control: without the sandbox the same probe gets through.
	run timeout 60 env CLOAK_TEST_HOOK=sandbox-probe-devices "$HOOKS" "${MEMORY_ARGS[@]}" --no-sandbox "$HELLO"
	[[ "$output" == *"sandbox: open-dev-kvm ALLOWED"* ]] || { echo "$output"; return 1; }
	[[ "$output" == *"sandbox: ioctl "* ]] || { echo "$output"; return 1; }
	[[ "$output" != *"sandbox: ioctl refused EPERM"* ]] || { echo "$output"; return 1; }
}

@test "a reply out of shape or out of turn ends the guest with 246, and the wipe runs" {
	need_kvm
	local hook why
	# Each is caught at the reply itself: a wrong number at once, not at
	# the next call. A reply made before its request may be seen before
	# the next request is made, or after (it then lacks that request's
	# token).
	for hook in device-garbage:"replied out of shape" device-status:"replied out of shape" \
		device-seq:"replied out of turn" device-unsolicited:"replied"; do
		why=${hook#*:} hook=${hook%%:*}
		run timeout 60 env CLOAK_TEST_HOOK=$hook "$HOOKS" -v "${MEMORY_ARGS[@]}" "$HELLO"
		[ "$status" -eq 246 ] || { echo "$hook: $status: $output"; return 1; }
		[[ "$output" == *"cloak: device process $why"* ]] || { echo "$hook: $output"; return 1; }
		[[ "$output" == *"guest memory wiped:"* ]] || { echo "$hook: $output"; return 1; }
		# The guest got no further than the call whose reply was bad.
		[[ "$output" != *"Hello from a cloak guest"* ]] || { echo "$hook: $output"; return 1; }
	done
	# Control: the same monitor with a well-behaved device process.
	run timeout 60 "$HOOKS" -v "${MEMORY_ARGS[@]}" "$HELLO"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
}

@test "a device process that keeps private pages mapped at PROTECT or unshared ones at UNSHARE ends the guest with 246 before it runs on, and the wipe runs" {
	need_kvm
	new_token
	local hook
	# threat_private.elf's "unshare" shares a page before PROTECT, unshares
	# it after, and then writes the secret there: a compromised device
	# process would keep either mapping to read what comes next.
	for hook in device-keeps-private device-keeps-unshared; do
		run timeout 60 env CLOAK_TEST_HOOK=$hook "$HOOKS" -v "${MEMORY_ARGS[@]}" \
			"$GUESTS/threat_private.elf" "$TOKEN" unshare
		[ "$status" -eq 246 ] || { echo "$hook: $status: $output"; return 1; }
		[[ "$output" == *"cloak: device process maps a private guest page: "* ]] ||
			{ echo "$hook: $output"; return 1; }
		[[ "$output" == *"guest memory wiped:"* ]] || { echo "$hook: $output"; return 1; }
		# The runner caught it at that call's reply: the guest never went
		# on to write the secret into the page.
		[[ "$output" != *"unshare ret="* ]] || { echo "$hook: $output"; return 1; }
	done
	# Control: a well-behaved device process unmaps both, and the guest runs on.
	run timeout 60 "$HOOKS" -v "${MEMORY_ARGS[@]}" "$GUESTS/threat_private.elf" "$TOKEN" unshare
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	expect_line "unshare ret=0"
}

@test "either process dying ends both: the device process killed gives 246 and the wipe; the runner killed takes the device process with it" {
	need_kvm; need_root
	new_token
	start_with_device -v --memory=shared
	signal_device KILL 246
	grep -q 'cloak: device process died' "$GUEST_OUT" || { cat "$GUEST_OUT"; return 1; }
	# The runner killed: the device process does not outlive it.
	start_with_device --memory=shared
	kill -KILL "$MON_PID"
	wait "$MON_PID" || true
	local i
	for i in $(seq 50); do
		kill -0 "$DEV_PID" 2>/dev/null || return 0
		sleep 0.1
	done
	echo "device process $DEV_PID outlived its runner"
	kill -KILL "$DEV_PID" # it holds this test's output open
	return 1
}

@test "a stop request sent to the device process alone ends the VM with 240, wiped" {
	need_kvm; need_root
	new_token
	start_with_device -v --memory=shared
	signal_device TERM 240
}

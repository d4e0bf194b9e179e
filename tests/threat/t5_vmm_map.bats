#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Threat 5, a compromised monitor: where KVM runs guest code natively and
# offers a mappable guest_memfd, the monitor gives guest memory up once the
# guest protects it (docs/design.md, "Giving guest memory up"): no mapping of
# a private page, no descriptor to map one again, and the vCPU zeroes it at
# the end. Where KVM emulates guest code it reads guest memory through the
# monitor's mapping, so the monitor keeps it: the tests say so there.
bats_require_minimum_version 1.5.0
load threat_helpers

HOOKS=$ROOT/$O/tests/cloak-hooks

# The tests run the default backend explicitly (DEFAULT), whatever backend
# a run selected for the other suites.
DEFAULT=$(auto_backend)

# Where KVM runs guest code natively but would decode the instructions it
# intercepts from guest memory (SVM without next-RIP save, as under QEMU's
# TCG), the shipped monitor keeps its mapping of a guest_memfd (first two
# tests). The test build then gives the memory up anyway
# (CLOAK_TEST_GIVE_UP=1, monitor/test_hooks.h) and runs every test below,
# so they still show KVM running a guest without the monitor's mapping:
# the threat guests execute no intercepted instruction once protected.
FORCED=0
if [ "$DEFAULT" = gmem ] && [ "$(kvm_kind)" = hardware ] && ! gmem_gives_up; then
	FORCED=1
	export CLOAK_TEST_GIVE_UP=1
	CLOAK=$HOOKS
fi

# gives_up: the monitor under test gives the default backend's memory up.
gives_up() {
	[ "$DEFAULT" = gmem ] && { [ "$FORCED" = 1 ] || gmem_gives_up; }
}

# need_protected_default: a host where some protected backend runs.
need_protected_default() {
	[ "$DEFAULT" != none ] || skip "no protected backend runs on this host (the default refuses: first test)"
}

# gmem_lines PID: the monitor's mappings of the guest_memfd, "lo hi offset".
gmem_lines() {
	awk '/kvm-gmem/ { split($1, r, "-"); print r[1], r[2], $3 }' "/proc/$1/maps"
}

@test "where no protected backend runs, the default refuses in one line naming --memory=shared" {
	need_kvm
	[ "$DEFAULT" = none ] || skip "the default here is $DEFAULT (the tests below)"
	run timeout 60 "$CLOAK_REAL" "$HELLO"
	[ "$status" -eq 249 ] || { echo "$status: $output"; return 1; }
	[[ "$output" == "cloak: no protected memory runs on this host"*"use --memory=shared" ]]
	[ "$(grep -c '' <<<"$output")" -eq 1 ]
}

@test "PROTECT reports NO_VMM_MAP exactly where the monitor gives memory up" {
	need_kvm; need_protected_default
	new_token
	run_cloak --memory="$DEFAULT" "$GUESTS/threat_secret.elf" "$TOKEN" 0
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	local flags
	flags=$(sed -n 's/^ready: protection \(0x[0-9a-f]*\),.*/\1/p' <<<"$output")
	if gives_up; then
		(( flags & 0x8 )) || { echo "flags $flags: $output"; return 1; }
	else
		(( !(flags & 0x8) )) || { echo "flags $flags claim NO_VMM_MAP here"; return 1; }
	fi
	[ "$FORCED" = 1 ] || return 0
	# The shipped monitor keeps the mapping here, and says why.
	run timeout 60 "$CLOAK_REAL" -v --memory=gmem "$GUESTS/threat_secret.elf" "$TOKEN" 0
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	flags=$(sed -n 's/^ready: protection \(0x[0-9a-f]*\),.*/\1/p' <<<"$output")
	(( !(flags & 0x8) )) || { echo "the shipped monitor claims NO_VMM_MAP: $output"; return 1; }
	expect_line "mapped in this monitor and reachable by GUP: kvm_amd runs without next-RIP save"
}

@test "after PROTECT the monitor maps no private page: its guest_memfd mappings are the shared pages only" {
	need_kvm; need_root
	gives_up || skip "this host's KVM needs the monitor's mapping of guest memory (see the next tests)"
	new_token
	start_guest -- -v --memory="$DEFAULT" "$GUESTS/threat_secret.elf" "$TOKEN" 30
	local gpa shared total=0
	gpa=$(sed -n 's/^ready: .* at \(0x[0-9a-f]*\),.*/\1/p' "$GUEST_OUT")
	shared=$(sed -n 's/.*guest enabled memory protection (\([0-9]*\) pages shared).*/\1/p' "$GUEST_OUT")
	while read -r lo hi off; do
		local size=$((16#$hi - 16#$lo)) start=$((16#$off))
		total=$((total + size))
		if (( gpa >= start && gpa < start + size )); then
			stop_guest
			echo "a mapping at offset 0x$off covers the secret's page $gpa"; return 1
		fi
	done < <(gmem_lines "$MON_PID")
	stop_guest
	[ "$total" -gt 0 ] || { echo "no guest_memfd mapping at all"; return 1; }
	# What is left mapped is what was shared then (the call pages, the
	# bounce pool, the monitor window), not a page more.
	[ "$total" -le $((shared * 4096)) ] || { echo "$total bytes mapped, $shared pages shared"; return 1; }
}

@test "root's process_vm_readv, /proc/PID/mem and PEEKDATA over every monitor mapping do not find the secret" {
	need_kvm; need_root; need_protected_default
	new_token
	start_guest -- --memory="$DEFAULT" "$GUESTS/threat_secret.elf" "$TOKEN" 30
	run "$PROBE" "$MON_PID" "CLOAK-THREAT-$REV-SECRET" all-readv all-procmem all-peek
	stop_guest
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	if gives_up; then
		expect_line "all-readv: "
		[[ "$output" != *"needle found"* ]] || { echo "$output"; return 1; }
	else
		# The secret backend is refused to GUP (t2); the control below
		# shows these reads do find a secret they can reach.
		[[ "$output" != *"needle found"* ]] || { echo "$output"; return 1; }
	fi
}

@test "control: the same reads find the secret of a --memory=shared guest" {
	need_kvm; need_root
	new_token
	start_guest -- --memory=shared "$GUESTS/threat_secret.elf" "$TOKEN" 30
	run "$PROBE" "$MON_PID" "CLOAK-THREAT-$REV-SECRET" all-readv all-procmem
	stop_guest
	expect_line "all-readv: "
	[ "$(grep -c 'needle found' <<<"$output")" -eq 2 ] || { echo "$output"; return 1; }
}

@test "the monitor scanning its own address space after PROTECT finds the secret only where one process keeps the mapping; the device process never" {
	need_kvm; need_protected_default
	new_token
	local needle_rev
	needle_rev=$(printf '%s' "CLOAK-THREAT-$REV-SECRET" | rev)
	# The scan runs where POLL is served: in one process (the monitor
	# that also holds the vCPU), or in the device process (the default).
	run timeout 60 env CLOAK_TEST_HOOK=selfscan CLOAK_TEST_NEEDLE_REV="$needle_rev" \
		"$HOOKS" --no-device-isolation --memory="$DEFAULT" "$GUESTS/threat_secret.elf" "$TOKEN" 1
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	if gives_up; then
		expect_line "needle not found"
	else
		# Here KVM reads guest memory through the monitor's mapping: a
		# compromised monitor can read it (docs/threat-model.md).
		expect_line "selfscan: needle found"
	fi
	# The device process maps no private page on any host.
	run timeout 60 env CLOAK_TEST_HOOK=selfscan CLOAK_TEST_NEEDLE_REV="$needle_rev" \
		"$HOOKS" --memory="$DEFAULT" "$GUESTS/threat_secret.elf" "$TOKEN" 1
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	expect_line "mappings read, needle not found"
	# Control: with protection of no use to it (shared memory) the scan
	# of the one process finds the secret everywhere.
	run timeout 60 env CLOAK_TEST_HOOK=selfscan CLOAK_TEST_NEEDLE_REV="$needle_rev" \
		"$HOOKS" --no-device-isolation --memory=shared "$GUESTS/threat_secret.elf" "$TOKEN" 1
	expect_line "selfscan: needle found"
}

@test "with memory given up the guest still does block and channel I/O, and nothing private leaks" {
	need_kvm; need_protected_default
	new_token
	local img=$BATS_TEST_TMPDIR/disk.img dump=$BATS_TEST_TMPDIR/shared.dump
	truncate -s 64K "$img"
	run_cloak --memory="$DEFAULT" --block=disk="$img" --channel=c=listen:"$BATS_TEST_TMPDIR/c.sock" \
		--dump-shared="$dump" "$GUESTS/threat_private.elf" "$TOKEN"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	expect_line "block_info ret=0"
	expect_line "secret intact"
	absent "CLOAK-PRIVATE-$REV" "$img" "$dump"
	present SHARED-CONTROL "$img"
}

@test "SHARE after PROTECT is refused for pages the monitor gave up or its device process never mapped (EPERM), and works in one process that kept them" {
	need_kvm; need_protected_default
	run_cloak --memory="$DEFAULT" "$GUESTS/hostile.elf" share_after_protect
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	expect_line "share_after_protect ret=-14"
	run_cloak --no-device-isolation --memory="$DEFAULT" "$GUESTS/hostile.elf" share_after_protect
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	if gives_up; then
		expect_line "share_after_protect ret=-14"
	else
		expect_line "share_after_protect ret=0"
	fi
	expect_line "unshare_window ret=-14"
	# docs/abi.md, "Pages that can never be unshared": the whole window,
	# and nothing else.
	expect_line "unshare_window_last ret=-14"
	expect_line "unshare_into_window ret=-14"
	expect_line "unshare_below_window ret=0"
}

@test "after the run no private byte is left in physical memory (/proc/kcore)" {
	need_kvm; need_root
	[ -r /proc/kcore ] || skip "no /proc/kcore on this kernel"
	gives_up || skip "here the monitor keeps and wipes guest memory itself (test_guestmem)"
	new_token
	start_guest -- -v --memory="$DEFAULT" "$GUESTS/threat_secret.elf" "$TOKEN" 30
	# Control: while the guest runs, its secret is in RAM (guest_memfd
	# pages stay in the direct map) and the scan finds it.
	run "$PROBE" 1 "$TOKEN" kcore # (the TOKEN: see t1_direct_map.bats)
	local during=$output
	stop_guest
	[ "$GUEST_STATUS" -eq 240 ]
	grep -q "guest memory zeroed by the vCPU" "$GUEST_OUT" || { cat "$GUEST_OUT"; return 1; }
	[[ "$during" == *"needle found"* ]] || { echo "control: $during"; return 1; }
	run "$PROBE" 1 "$TOKEN" kcore
	expect_line "kcore: read "
	expect_line "needle not found"
}

@test "a fault of the monitor after it gave memory up: 248, one line that does not claim a wipe" {
	need_kvm; need_protected_default
	gives_up || skip "the monitor keeps its mapping of guest memory here (first tests)"
	new_token
	run timeout 60 env CLOAK_TEST_HOOK=fault-given-up "$HOOKS" --memory="$DEFAULT" \
		"$GUESTS/threat_secret.elf" "$TOKEN" 0
	[ "$status" -eq 248 ] || { echo "$status: $output"; return 1; }
	[ "$(grep -c '^cloak: ' <<<"$output")" -eq 1 ] || { echo "$output"; return 1; }
	[[ "$output" == *"cloak: internal error: the monitor faulted; it no longer maps private guest memory, which the kernel frees at exit unwiped"* ]] ||
		{ echo "$output"; return 1; }
}

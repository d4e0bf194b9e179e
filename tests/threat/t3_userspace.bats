#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Threat 3 (the proposal: host userspace access to guest data, "compromised qemu"):
# the monitor only touches pages the guest shared, so asking it to read or
# write private pages gets nothing out; and other processes of the same
# user cannot attach to it (PR_SET_DUMPABLE 0). What a compromised monitor
# itself can still do is in docs/threat-model.md.
load threat_helpers

leak_attempt() { # MODE: run threat_private with a disk, a channel, a dump
	new_token
	IMG=$BATS_TEST_TMPDIR/disk.img DUMP=$BATS_TEST_TMPDIR/shared.dump
	SOCK=$BATS_TEST_TMPDIR/c.sock
	truncate -s 64K "$IMG"
	run_cloak --block=disk="$IMG" --channel=c=listen:"$SOCK" --dump-shared="$DUMP" \
		"$GUESTS/threat_private.elf" "$TOKEN" "$@"
	SECRET="CLOAK-PRIVATE-$REV"
}

@test "every call that reads or writes guest memory refuses private buffers (EACCES)" {
	need_kvm
	leak_attempt
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	for call in console_private random_into_private block_write_from_private \
		block_read_into_private chan_write_from_private chan_read_into_private; do
		expect_line "$call ret=-3"
	done
	expect_line "block_info ret=0"
	expect_line "chan_open ret=0"
	# Writes into private pages did not happen either.
	expect_line "secret intact"
}

@test "the private secret appears in no output, disk image or shared page" {
	need_kvm
	leak_attempt
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" > "$BATS_TEST_TMPDIR/output"
	[ -s "$DUMP" ] || { echo "no dump of shared pages"; return 1; }
	absent "$SECRET" "$BATS_TEST_TMPDIR/output" "$IMG" "$DUMP"
	# Controls: data from a shared page does reach the image and the dump.
	present SHARED-CONTROL "$IMG" "$DUMP"
}

@test "control: once the guest shares the secret's page, the dump of shared pages shows it" {
	need_kvm
	leak_attempt share
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	expect_line "share_secret_page ret=0"
	grep -qaF "$SECRET" "$DUMP"
}

@test "an abort message in a private page is refused and not printed" {
	need_kvm
	leak_attempt abort
	[ "$status" -eq 255 ] || { echo "$output"; return 1; }
	expect_line "unreadable"
	printf '%s\n' "$output" > "$BATS_TEST_TMPDIR/output"
	absent "$SECRET" "$BATS_TEST_TMPDIR/output"
}

# Same user (root) but without capabilities: the position of any other
# process of the user that runs the monitor. The monitor runs cap-less
# too, since the kernel also refuses a tracer whose capabilities are not a
# superset of the tracee's; only then is PR_SET_DUMPABLE what decides.
NOCAPS=(setpriv --bounding-set=-all --inh-caps=-all --ambient-caps=-all)

@test "a same-user process cannot ptrace, process_vm_readv or /proc/PID/mem the monitor" {
	need_kvm; need_root
	need_cmd setpriv util-linux
	new_token
	start_guest "${NOCAPS[@]}" -- --mem=4M "$GUESTS/threat_secret.elf" "$TOKEN" 30
	# Guest RAM is the largest mapping of the backend's file (as the probe finds it).
	range=$(grep -E 'secretmem|memfd:cloak-guest|kvm-gmem' "/proc/$MON_PID/maps" |
		while read -r r _; do echo "$((16#${r#*-} - 16#${r%-*})) $r"; done | sort -n | tail -1)
	range=${range#* }
	run env THREAT_RANGE="$range" "${NOCAPS[@]}" "$PROBE" "$MON_PID" \
		"CLOAK-THREAT-$REV-SECRET" ptrace readv procmem
	PROBE_OUT=$output
	# Control: the same attacker against an ordinary process of the same
	# user and capabilities gets in.
	"${NOCAPS[@]}" sleep 30 &
	ctl=$!
	sleep 0.2
	run "${NOCAPS[@]}" "$PROBE" "$ctl" x ptrace
	kill "$ctl"
	CTL_OUT=$output
	stop_guest
	output=$PROBE_OUT
	expect_line "ptrace-attach: refused EPERM"
	expect_line "readv: refused EPERM"
	expect_line "procmem-open: refused EACCES"
	output=$CTL_OUT
	expect_line "ptrace-attach: attached"
}

@test "a same-user process cannot even read the monitor's memory map (it is not dumpable)" {
	need_kvm; need_root
	need_cmd setpriv util-linux
	new_token
	start_guest "${NOCAPS[@]}" -- --mem=4M "$GUESTS/threat_secret.elf" "$TOKEN" 30
	run "${NOCAPS[@]}" cat "/proc/$MON_PID/maps"
	MAPS_STATUS=$status MAPS_OUT=$output
	# Control: the same reader gets the map of an ordinary process of the
	# same user and capabilities.
	"${NOCAPS[@]}" sleep 30 &
	ctl=$!
	sleep 0.2
	run "${NOCAPS[@]}" cat "/proc/$ctl/maps"
	kill "$ctl"
	CTL_STATUS=$status CTL_OUT=$output
	stop_guest
	[ "$MAPS_STATUS" -ne 0 ] || { echo "maps readable: $MAPS_OUT"; return 1; }
	[[ "$MAPS_OUT" == *"Permission denied"* ]]
	[ "$CTL_STATUS" -eq 0 ]
	[[ "$CTL_OUT" == *"sleep"* ]]
}

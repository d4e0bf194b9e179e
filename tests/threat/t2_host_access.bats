#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Threat 2 (the proposal: host-kernel-induced access to guest data, e.g.
# write(fd, &guest_data_ptr, len)): while a guest holds a secret in private
# memory, another root process makes the kernel touch the monitor's guest
# RAM through process_vm_readv, /proc/PID/mem, vmsplice and O_DIRECT: the
# kernel refuses them all. (cloak check does the same from inside the
# monitor process: tests/threat/check.bats.)
load threat_helpers

attack() { # BACKEND METHODS...: probe a guest holding the secret
	local mem=$1; shift
	new_token
	start_guest -- --memory="$mem" "$GUESTS/threat_secret.elf" "$TOKEN" 30
	run "$PROBE" "$MON_PID" "CLOAK-THREAT-$REV-SECRET" "$@"
	PROBE_STATUS=$status PROBE_OUT=$output
	stop_guest
	output=$PROBE_OUT
	[ "$PROBE_STATUS" -eq 0 ] || { echo "probe: $output"; return 1; }
}

@test "process_vm_readv and /proc/PID/mem on guest RAM are refused (EFAULT, EIO)" {
	need_kvm; need_root; need_backend secret
	attack secret readv procmem
	expect_line "range: "
	expect_line "/secretmem"
	expect_line "readv: refused EFAULT"
	expect_line "procmem: refused EIO"
	[[ "$output" != *"needle found"* ]]
	[ "$GUEST_STATUS" -eq 240 ]
}

@test "no process can take a descriptor for secret guest RAM: the monitor keeps none" {
	need_kvm; need_root; need_backend secret
	# A process allowed to take the monitor's descriptors (root with
	# CAP_SYS_PTRACE, pidfd_getfd) could map guest RAM and read it like its
	# owner; the monitor closes the memfd_secret descriptor once mapped, so
	# there is nothing to take, and /proc/PID/map_files is refused.
	attack secret stolen
	expect_line "stolen-mapfiles: refused"
	expect_line "stolen-open: refused"
	[[ "$output" != *"needle found"* ]]
}

@test "vmsplice and O_DIRECT from secret memory are refused even to its owner" {
	need_kvm
	# Only a process that maps the pages can name them to vmsplice or
	# O_DIRECT; cloak check does it on the monitor's own guest memory.
	run "$CLOAK" check
	[[ "$output" == *"yes     refused to vmsplice (GUP): vmsplice from the mapping: EFAULT"* ]]
	[[ "$output" == *"yes     refused to O_DIRECT writes (GUP): O_DIRECT write to a file in "*": EFAULT"* ]]
}

@test "control: the same attacks read the secret out of a --memory=shared guest" {
	need_kvm; need_root
	attack shared readv procmem stolen
	expect_line "readv: read 67108864 bytes, needle found"
	expect_line "procmem: read 67108864 bytes, needle found"
	expect_line "stolen-vmsplice: read 67108864 bytes, needle found"
	expect_line "stolen-odirect: read 67108864 bytes, needle found"
}

@test "the guest's secret is intact after the attacks" {
	need_kvm; need_root
	new_token
	start_guest -- "$GUESTS/threat_secret.elf" "$TOKEN" 2
	"$PROBE" "$MON_PID" "CLOAK-THREAT-$REV-SECRET" readv procmem stolen >/dev/null
	GUEST_STATUS=0
	wait "$MON_PID" || GUEST_STATUS=$?
	[ "$GUEST_STATUS" -eq 0 ] || { cat "$GUEST_OUT"; return 1; }
	grep -q '^secret intact' "$GUEST_OUT"
}

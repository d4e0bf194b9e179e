#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# `cloak check`: it probes this host for real, reports every protection per
# backend, and its exit status says whether the default backend's hold.
load threat_helpers

@test "cloak check: the secret backend's promised protections hold here (exit 0)" {
	need_kvm
	run_cloak check
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	expect_line "refused to process_vm_readv (another process)  yes*"
	expect_line "yes     refused through /proc/PID/mem: pread of /proc/PPID/mem by a child: EIO"
	expect_line "the owner's pread of /proc/self/mem: EIO"
	expect_line "yes     refused to vmsplice (GUP): vmsplice from the mapping: EFAULT"
	expect_line "O_DIRECT write to a file in"
	expect_line "default backend (secret): every promised protection holds"
}

@test "cloak check --json: one document whose verdicts match the probes" {
	need_kvm
	command -v jq >/dev/null || skip "jq not installed"
	run_cloak check --json
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	j() { printf '%s' "$output" | jq -r "$1"; }
	[ "$(j '.default_holds')" = true ]
	[ "$(j '.backends | map(.name) | join(",")')" = "secret,gmem,shared" ]
	sec() { j ".backends[0].protections[] | select(.id==\"$1\") | .result"; }
	for id in process_vm_readv proc_pid_mem vmsplice o_direct core_dump fork wipe kvm_run; do
		[ "$(sec $id)" = yes ] || { echo "secret $id: $(sec $id)"; return 1; }
	done
	# Every result is one of the three words, and each says how.
	[ "$(j '[.backends[].protections[] | select(.result != "yes" and .result != "no" and .result != "unknown")] | length')" = 0 ]
	[ "$(j '[.backends[].protections[] | select(.how == "")] | length')" = 0 ]
}

@test "cloak check tells a protected backend from an unprotected one (shared: GUP paths go through)" {
	need_kvm
	command -v jq >/dev/null || skip "jq not installed"
	run_cloak check --json
	sh() { printf '%s' "$output" | jq -r ".backends[2].protections[] | select(.id==\"$1\") | .result"; }
	for id in process_vm_readv proc_pid_mem vmsplice o_direct core_dump; do
		[ "$(sh $id)" = no ] || { echo "shared $id: $(sh $id)"; return 1; }
	done
}

@test "cloak check says plainly that guest RAM is not hidden from the monitor here" {
	need_kvm
	run_cloak check
	expect_line "no      hidden from the monitor process: the monitor maps guest RAM rw-s"
	# The probe made the mapping PROT_NONE and saw KVM fail without it.
	expect_line "KVM here needs it: with it PROT_NONE"
}

@test "cloak check without a usable /dev/kvm exits 249 with one line" {
	need_root
	command -v unshare >/dev/null || skip "unshare not installed"
	# A private mount namespace where /dev/kvm is /dev/null: opens, but no KVM.
	run unshare --mount sh -c "mount --bind /dev/null /dev/kvm && exec '$CLOAK' check"
	[ "$status" -eq 249 ] || { echo "status $status: $output"; return 1; }
	[ "$(printf '%s\n' "$output" | grep -c '^cloak: ')" -eq 1 ]
	expect_line "/dev/kvm is not a KVM device"
}

@test "cloak check exits 1 when the secret backend cannot be had (memlock too small)" {
	need_kvm
	need_root
	# Without CAP_IPC_LOCK the 1 MiB limit applies to the 4 MiB probe.
	run sh -c "ulimit -l 1024 && exec setpriv --bounding-set=-ipc_lock,-sys_resource \
		--inh-caps=-ipc_lock,-sys_resource '$CLOAK' check"
	[ "$status" -eq 1 ] || { echo "status $status: $output"; return 1; }
	expect_line "not available: RLIMIT_MEMLOCK"
	expect_line "default backend (secret): a promised protection does NOT hold"
}

@test "cloak check does not take an O_DIRECT write on tmpfs for GUP: unknown, with the reason" {
	need_kvm
	need_root
	command -v unshare >/dev/null || skip "unshare not installed"
	command -v jq >/dev/null || skip "jq not installed"
	# tmpfs takes O_DIRECT but copies the data, so secret memory would
	# "go through" there and the row would wrongly say no.
	run unshare --mount sh -c "mount -t tmpfs none /tmp && mount -t tmpfs none /var/tmp &&
		cd /tmp && exec '$CLOAK' check --json"
	od() { printf '%s' "$output" | jq -r ".backends[0].protections[] | select(.id==\"o_direct\") | .$1"; }
	[ "$(od result)" = unknown ] || { echo "o_direct: $(od result): $(od how)"; return 1; }
	[[ "$(od how)" == *"/tmp (tmpfs, which copies O_DIRECT data without GUP)"* ]] || { od how; return 1; }
}

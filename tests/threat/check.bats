#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# `cloak check`: it probes this host for real, reports every protection per
# backend, and its exit status says exactly what its summary says.
bats_require_minimum_version 1.5.0
load threat_helpers

# The default's backend here: what --memory=auto picks (helpers.bash).
default_index() { [ "$(auto_backend)" = secret ] && echo 0 || echo 1; }

# check_with_lock_limit KIB: `cloak check` run under a lock limit of KIB
# KiB and without CAP_IPC_LOCK (which lifts the limit for root); fails
# unless it exits 1. SKIPs where the default is not the secret backend,
# the one the limit binds.
check_with_lock_limit() {
	[ "$(auto_backend)" = secret ] || skip "the default here is not the secret backend"
	run sh -c "ulimit -l $1 && exec setpriv --bounding-set=-ipc_lock,-sys_resource \
		--inh-caps=-ipc_lock,-sys_resource '$CLOAK' check"
	[ "$status" -eq 1 ] || { echo "status $status: $output"; return 1; }
}

@test "cloak check: the default backend's promises, and an exit status that says exactly that" {
	need_kvm
	run_cloak check
	local st=$status
	if [ "$(auto_backend)" = none ]; then
		expect_line "default (--memory=auto): no protected backend runs here: no protected memory runs on this host"
		[ "$st" -eq 1 ] || { echo "status $st: $output"; return 1; }
		return 0
	fi
	expect_line "default (--memory=auto): $(auto_backend); of the "
	local held failed unseen
	read -r held failed unseen < <(sed -n 's/.* promises, \([0-9]*\) hold, \([0-9]*\) do NOT, \([0-9]*\) could not.*/\1 \2 \3/p' <<<"$output")
	[ -n "$held" ] || { echo "$output"; return 1; }
	# 0 only when every promise was seen to hold and a default run starts;
	# 2 when none failed but some could not be observed; 1 otherwise.
	if [ "$failed" -gt 0 ]; then want=1; elif [ "$unseen" -gt 0 ]; then want=2; else want=0; fi
	[[ "$output" == *"a default run (--mem=64M) can start here"* ]] || want=1
	[ "$st" -eq "$want" ] || { echo "status $st, want $want: $output"; return 1; }
	[ "$failed" -eq 0 ] || { echo "$output"; return 1; }
	if [ "$(auto_backend)" = secret ]; then
		expect_line "refused to process_vm_readv (another process)  yes*"
		expect_line "yes     refused through /proc/PID/mem: pread of /proc/PPID/mem by a child: EIO"
		expect_line "the owner's pread of /proc/self/mem: EIO"
		expect_line "yes     refused to vmsplice (GUP): vmsplice from the mapping: EFAULT"
	fi
}

@test "cloak check --json: one document whose verdicts match the probes" {
	need_kvm
	need_cmd jq jq
	run_cloak check --json
	local st=$status
	j() { printf '%s' "$output" | jq -r "$1"; }
	[ "$(j '.default.status')" = "$st" ] || { echo "status $st: $output"; return 1; }
	if [ "$(auto_backend)" = none ]; then
		[ "$(j '.default.backend')" = null ]
		[ "$(j '.default.runs')" = false ]
		[ "$st" = 1 ]
		return
	fi
	[ "$(j '.default.backend')" = "$(auto_backend)" ]
	[ "$(j '.host.kvm_kind')" = "$(kvm_kind)" ]
	[ "$(j '.backends | map(.name) | join(",")')" = "secret,gmem,shared" ]
	local i; i=$(default_index)
	# Every promised protection of the default is yes or unknown, never no,
	# and the counts agree with the rows.
	[ "$(j "[.backends[$i].protections[] | select(.promised and .result == \"no\")] | length")" = 0 ]
	[ "$(j "[.backends[$i].protections[] | select(.promised and .result == \"yes\")] | length")" = "$(j .default.promised_hold)" ]
	[ "$(j "[.backends[$i].protections[] | select(.promised and .result == \"unknown\")] | length")" = "$(j .default.promised_unobserved)" ]
	# Every result is one of the three words, and each says how.
	[ "$(j '[.backends[].protections[] | select(.result != "yes" and .result != "no" and .result != "unknown")] | length')" = 0 ]
	[ "$(j '[.backends[].protections[] | select(.how == "")] | length')" = 0 ]
}

@test "cloak check tells a protected backend from an unprotected one (shared: GUP paths go through)" {
	need_kvm
	need_cmd jq jq
	run_cloak check --json
	sh() { printf '%s' "$output" | jq -r ".backends[2].protections[] | select(.id==\"$1\") | .result"; }
	for id in process_vm_readv proc_pid_mem vmsplice o_direct core_dump; do
		[ "$(sh $id)" = no ] || { echo "shared $id: $(sh $id)"; return 1; }
	done
}

@test "cloak check: every backend that runs here keeps its promises, not only the default" {
	need_kvm
	need_cmd jq jq
	# kvm_run is left out: that row says whether KVM takes the backend at
	# all (secret memory on a GUP-faulting KVM), which the default's test
	# above judges.
	local broken
	broken=$(check_json | jq -r '.backends[] | select(.available) | .name as $b
		| .protections[] | select(.promised and .result == "no" and .id != "kvm_run")
		| "\($b) \(.id): \(.how)"')
	[ -z "$broken" ] || { echo "$broken"; return 1; }
	# And some backend besides the default was judged.
	[ "$(check_json | jq '[.backends[] | select(.available)] | length')" -ge 2 ]
}

@test "cloak check measures, for every backend that runs here, that the host-facing code holds no private page and cannot reach KVM" {
	need_kvm
	need_cmd jq jq
	local rows
	rows=$(check_json | jq -r '.backends[] | select(.available)
		| .protections[] | select(.id == "devices_apart") | "\(.result) \(.promised) \(.how)"')
	[ -n "$rows" ] || { echo "no devices_apart row"; return 1; }
	while read -r result promised how; do
		[ "$result" = yes ] || { echo "$result: $how"; return 1; }
		[ "$promised" = true ] || { echo "not promised: $how"; return 1; }
		# Measured: the control (private pages mapped before PROTECT) was
		# seen, and each forbidden call was refused.
		[[ "$how" == *"before PROTECT (control)"* ]] || { echo "$how"; return 1; }
		[[ "$how" == *"/dev/kvm: EPERM, ioctl: EPERM, mmap of a descriptor: EPERM"* ]] ||
			{ echo "$how"; return 1; }
	done <<<"$rows"
}

@test "cloak check says plainly whether guest RAM is hidden from the monitor on this host" {
	need_kvm
	run_cloak check
	if [ "$(kvm_kind)" = emulating ]; then
		expect_line "no      hidden from the monitor process: the monitor maps guest RAM rw-s"
		# The probe made the mapping PROT_NONE and saw KVM fail without it.
		expect_line "KVM here needs it: with it PROT_NONE"
	elif gmem_gives_up; then
		expect_line "yes     hidden from the monitor process: the monitor gave guest memory up"
	elif (( ($(check_json | jq -r .host.guest_memfd_flags) & 3) == 3 )); then
		# A hardware KVM that would decode intercepted instructions from
		# guest memory (SVM without next-RIP save): the mapping stays, and
		# the row says why.
		expect_line "kvm_amd runs without next-RIP save"
	fi
}

@test "cloak check without a usable /dev/kvm exits 249 with one line" {
	need_root
	need_cmd unshare util-linux
	# A private mount namespace with a /dev of its own, whatever this host
	# has: /dev/kvm there is the null device, which opens but is no KVM.
	run unshare --mount sh -c "mount -t tmpfs none /dev && mknod -m 666 /dev/null c 1 3 &&
		mknod -m 666 /dev/kvm c 1 3 && exec '$CLOAK' check"
	[ "$status" -eq 249 ] || { echo "status $status: $output"; return 1; }
	[ "$(printf '%s\n' "$output" | grep -c '^cloak: ')" -eq 1 ] || { echo "$output"; return 1; }
	expect_line "/dev/kvm is not a KVM device"
}

@test "cloak check where /dev/kvm does not exist exits 249 with one line that says so" {
	need_root
	need_cmd unshare util-linux
	run unshare --mount sh -c "mount -t tmpfs none /dev && mknod -m 666 /dev/null c 1 3 &&
		exec '$CLOAK' check"
	[ "$status" -eq 249 ] || { echo "status $status: $output"; return 1; }
	[ "$(printf '%s\n' "$output" | grep -c '^cloak: ')" -eq 1 ] || { echo "$output"; return 1; }
	expect_line "cloak: /dev/kvm does not exist: load the KVM module"
	# No KVM, so no kind of KVM: the KVM line says none runs guest code
	# and what the CPU offers, not a kind this host does not have.
	local kvm
	kvm=$(grep '^KVM: /dev/kvm does not exist' <<<"$output") || { echo "$output"; return 1; }
	[[ $kvm == *"(no KVM runs guest code here; the CPU has "*"VMX/SVM)"* ]] || { echo "$kvm"; return 1; }
	[[ $kvm != *"emulates guest code"* && $kvm != *"natively"* ]] || { echo "$kvm"; return 1; }
	need_cmd jq jq
	run unshare --mount sh -c "mount -t tmpfs none /dev && mknod -m 666 /dev/null c 1 3 &&
		exec '$CLOAK' check --json 2>/dev/null"
	[ "$status" -eq 249 ] || { echo "status $status: $output"; return 1; }
	[ "$(jq -r '.host.kvm, .host.kvm_kind' <<<"$output" | paste -sd' ')" = "false none" ] ||
		{ echo "$output"; return 1; }
}

@test "cloak check exits 1 when the secret backend cannot be had (memlock too small)" {
	need_kvm
	need_root
	# The 1 MiB limit applies to the 4 MiB probe.
	check_with_lock_limit 1024
	expect_line "not available: RLIMIT_MEMLOCK"
	expect_line "a default run (--mem=64M) can NOT start here"
}

@test "cloak check does not take an O_DIRECT write on tmpfs for GUP: unknown, with the reason" {
	need_kvm
	need_root
	need_cmd unshare util-linux
	need_cmd jq jq
	# tmpfs takes O_DIRECT but copies the data, so secret memory would
	# "go through" there and the row would wrongly say no.
	# The monitor is run through a descriptor opened before the mounts: a
	# tree under /tmp would be hidden by them.
	run unshare --mount sh -c "mount -t tmpfs none /tmp && mount -t tmpfs none /var/tmp &&
		cd /tmp && exec /proc/self/fd/9 check --json" 9<"$CLOAK_REAL"
	od() { printf '%s' "$output" | jq -r ".backends[0].protections[] | select(.id==\"o_direct\") | .$1"; }
	[ "$(od result)" = unknown ] || { echo "o_direct: $(od result): $(od how)"; return 1; }
	[[ "$(od how)" == *"/tmp (tmpfs, which copies O_DIRECT data without GUP)"* ]] || { od how; return 1; }
}

@test "cloak check says a default run cannot start when the lock limit is too low for it (exit 1)" {
	need_kvm
	need_root
	# 8 MiB (the stock limit) fits the probes, not a 64 MiB guest.
	check_with_lock_limit 8192
	expect_line "a default run (--mem=64M) can NOT start here: RLIMIT_MEMLOCK (8192 KiB) is below the 64 MiB"
}

@test "cloak check and a run agree under a file size limit below a default guest's memory" {
	need_kvm
	local b
	b=$(auto_backend)
	[ "$b" != none ] || skip "no protected backend runs here (the default cannot start anyway)"
	# 32 MiB fits the probes' 4 MiB, not a 64 MiB memory file; a
	# guest_memfd is sized by KVM, and the limit does not apply to it.
	run bash -c "ulimit -f 32768; exec '$CLOAK' check"
	if [ "$b" = gmem ]; then
		expect_line "a default run (--mem=64M) can start here"
	else
		[ "$status" -eq 1 ] || { echo "status $status: $output"; return 1; }
		expect_line "a default run (--mem=64M) can NOT start here: the file size limit (ulimit -f, systemd LimitFSIZE: 32768 KiB) is below the 64 MiB"
	fi
	# What the check says is what a default run does (the monitor itself:
	# a run's CLOAK_TEST_MEMORY wrapper would name another backend).
	run bash -c "ulimit -f 32768; exec timeout 60 '$CLOAK_REAL' '$HELLO'"
	if [ "$b" = gmem ]; then
		[ "$status" -eq 0 ] || { echo "gmem under that limit: status $status: $output"; return 1; }
	else
		[ "$status" -eq 249 ] || { echo "a run under that limit: status $status: $output"; return 1; }
	fi
}

#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Booting guests: hello, arguments, exit statuses, options.
bats_require_minimum_version 1.5.0
load helpers

@test "hello boots with protected memory and prints its arguments" {
	need_kvm
	run_cloak "$HELLO" -- one "two words"
	[ "$status" -eq 0 ]
	[[ "$output" == *"Hello from a cloak guest!"* ]]
	[[ "$output" == *'argv[1] = "one"'* ]]
	[[ "$output" == *'argv[2] = "two words"'* ]]
	[[ "$output" == *"memory protection on"* ]]
}

@test "guest exit statuses pass through (0, 1, 42, 239)" {
	need_kvm
	for s in 0 1 42 239; do
		run_cloak "$GUESTS/exit_status.elf" "$s"
		[ "$status" -eq "$s" ] || { echo "wanted $s got $status: $output"; return 1; }
	done
}

@test "a guest exit status in the monitor's range is a violation (253)" {
	need_kvm
	run_cloak "$GUESTS/exit_status.elf" 240
	[ "$status" -eq 253 ]
	[[ "$output" == *"outside 0-239"* ]]
}

@test "returning from main exits with main's value" {
	need_kvm
	run_cloak "$GUESTS/exit_status.elf" 7 return
	[ "$status" -eq 7 ]
}

@test "--verbose names the backend and KVM capabilities" {
	need_kvm
	run_cloak --verbose "$HELLO"
	[ "$status" -eq 0 ]
	if [ -n "${CLOAK_TEST_MEMORY:-}" ]; then
		[[ "$output" == *"guest memory: $CLOAK_TEST_MEMORY: "* ]]
	else
		[[ "$output" == *"guest memory: $(auto_backend) (chosen for this host)"* ]]
	fi
	[[ "$output" == *"host: KVM API 12, guest_memfd"* ]]
	[[ "$output" == *"guest enabled memory protection"* ]]
}

@test "--quiet prints only guest output" {
	need_kvm
	run_cloak --quiet "$HELLO"
	[ "$status" -eq 0 ]
	[[ "$output" == *"Hello from a cloak guest!"* ]]
	[[ "$output" != *"cloak: "* ]]
}

@test "--memory=shared boots hello; --memory=gmem boots it where guest_memfd can be mapped, else says why (249)" {
	need_kvm
	run_cloak --memory=shared "$HELLO"
	[ "$status" -eq 0 ]
	[[ "$output" == *"Hello from a cloak guest!"* ]]
	local flags
	flags=$("$CLOAK" check --json | jq -r '.host.guest_memfd_flags')
	run_cloak --memory=gmem "$HELLO"
	if (( (flags & 3) == 3 )); then
		[ "$status" -eq 0 ] || { echo "flags $flags: $status $output"; return 1; }
		[[ "$output" == *"Hello from a cloak guest!"* ]]
	else
		[ "$status" -eq 249 ] || { echo "flags $flags: $status $output"; return 1; }
		[[ "$output" == "cloak: this host's"*"guest_memfd"* ]]
	fi
}

@test "--mem accepts sizes inside the bounds" {
	need_kvm
	for m in 4M 6M 64M 1G 4096K; do
		run_cloak --mem=$m "$HELLO"
		[ "$status" -eq 0 ] || { echo "--mem=$m: $status $output"; return 1; }
	done
}

@test "--mem outside bounds or malformed is a usage error (251)" {
	for m in 2M 3M 5M 17G 0 -1 64X "" 99999999999999999999G; do
		run_cloak --mem="$m" "$HELLO"
		[ "$status" -eq 251 ] || { echo "--mem=$m: $status"; return 1; }
		[[ "$output" == "cloak: --mem="* ]]
	done
}

@test "usage errors: no guest, unknown option, bad timeout, bad backend (251)" {
	run_cloak
	[ "$status" -eq 251 ]; [[ "$output" == *"no guest given"* ]]
	run_cloak --frobnicate "$HELLO"
	[ "$status" -eq 251 ]; [[ "$output" == *"unknown option --frobnicate"* ]]
	run_cloak --timeout=soon "$HELLO"
	[ "$status" -eq 251 ]; [[ "$output" == *"--timeout=soon"* ]]
	run_cloak --memory=magic "$HELLO"
	[ "$status" -eq 251 ]; [[ "$output" == *"unknown backend"* ]]
	run_cloak -q -v "$HELLO"
	[ "$status" -eq 251 ]
}

@test "--help and --version exit 0" {
	run_cloak --help
	[ "$status" -eq 0 ]; [[ "$output" == *"usage: cloak"* ]]; [[ "$output" == *"Exit status"* ]]
	run_cloak --version
	[ "$status" -eq 0 ]; [[ "$output" == "cloak "*"guest ABI 1"* ]]
}

@test "a missing guest file is a bad-image error (250)" {
	run_cloak /nonexistent/guest.elf
	[ "$status" -eq 250 ]
	[[ "$output" == "cloak: cannot open guest /nonexistent/guest.elf"* ]]
}

@test "a non-ELF file is rejected (250)" {
	run_cloak /etc/hostname
	[ "$status" -eq 250 ]
	assert_one_error_line
}

@test "a host ELF (not a cloak guest) is rejected (250)" {
	run_cloak /bin/true
	[ "$status" -eq 250 ]
	assert_one_error_line
}

@test "guest wall time is close to the host's" {
	need_kvm
	run_cloak "$GUESTS/timecheck.elf"
	[ "$status" -eq 0 ]
	local guest host
	guest=$(printf '%s\n' "$output" | sed -n 's/^walltime_s=//p')
	host=$(date +%s)
	[ $((host - guest)) -le 5 ]
	[ $((guest - host)) -le 5 ]
	[[ "$output" == *"monotonic ok"* ]]
	[[ "$output" == *"sleep ok"* ]]
	[[ "$output" == *"random ok"* ]]
}

# What the sandbox refuses is in sandbox.bats; that the monitor is not
# dumpable, in tests/threat/t3_userspace.bats (with a control).
@test "the monitor runs the guest inside a seccomp filter" {
	need_kvm
	"$CLOAK" --timeout=5 "$GUESTS/trap.elf" spin & pid=$!
	sleep 1
	seccomp=$(awk '/^Seccomp:/ {print $2}' /proc/$pid/status)
	kill -TERM $pid; wait $pid || true
	[ "$seccomp" = 2 ]
}

# Root's CAP_IPC_LOCK makes the kernel skip RLIMIT_MEMLOCK for secret
# memory; drop it (and CAP_SYS_RESOURCE) to see the limit act.
nocap() {
	setpriv --bounding-set=-ipc_lock,-sys_resource \
		--inh-caps=-ipc_lock,-sys_resource "$@"
}

@test "RLIMIT_MEMLOCK below the guest size: one-line error naming the fix, 249" {
	need_kvm; need_cmd setpriv util-linux
	# Refused before any guest runs, so this holds wherever memfd_secret exists.
	run bash -c "ulimit -l 1024; $(declare -f nocap); nocap '$CLOAK' --memory=secret --mem=64M '$HELLO'"
	[ "$status" -eq 249 ] || { echo "$status: $output"; return 1; }
	[ "$(printf '%s\n' "$output" | wc -l)" -eq 1 ] || { echo "$output"; return 1; }
	[[ "$output" == "cloak: RLIMIT_MEMLOCK (1024 KiB) is below the 64 MiB"*"ulimit -l 65536"* ]]
}

@test "a low soft RLIMIT_MEMLOCK is raised up to the hard limit" {
	need_kvm; need_backend secret; need_cmd setpriv util-linux
	# The hard limit here is the default 8192 KiB (no CAP_SYS_RESOURCE to
	# raise it); an 8 MiB guest fits under it once the soft limit is raised.
	local hard; hard=$(ulimit -H -l)
	[ "$hard" = unlimited ] || [ "$hard" -ge 8192 ] || skip "hard memlock limit below 8 MiB"
	run bash -c "ulimit -S -l 1024; $(declare -f nocap); nocap '$CLOAK' --memory=secret --mem=8M '$HELLO'"
	[ "$status" -eq 0 ] || { echo "$status: $output"; return 1; }
	[[ "$output" == *"memory protection on"* ]]
}

@test "a missing /dev/kvm is a one-line error with exit 249" {
	need_cmd unshare util-linux
	# A private mount namespace where /dev/kvm is hidden by an empty tmpfs /dev.
	run unshare -m bash -c "mount -t tmpfs none /dev && '$CLOAK' '$HELLO'"
	if [[ "$output" == *"mount"*"ermission"* || "$output" == *"unshare failed"* ]]; then
		skip "cannot create a mount namespace here"
	fi
	[ "$status" -eq 249 ] || { echo "$status: $output"; return 1; }
	[[ "$output" == "cloak: /dev/kvm does not exist"* ]]
}

@test "--verbose says what protects guest memory on this host: secret" {
	need_kvm; need_backend secret
	run_cloak -v --memory=secret "$HELLO"
	[[ "$output" == *"guest memory: secret: memfd_secret: out of the kernel direct map"*"GUP refused (checked: process_vm_readv EFAULT)"* ]]
}

@test "--verbose says what protects guest memory on this host: shared" {
	need_kvm
	run_cloak -v --memory=shared "$HELLO"
	[[ "$output" == *"guest memory: shared: plain memfd: NO protection"* ]]
	[[ "$output" == *"memory protection on: monitor access checked"* ]]
	[[ "$output" != *"refused to host GUP"* ]]
}

@test "a closed stdout does not kill the monitor: the guest runs to its end, memory wiped" {
	need_kvm
	run bash -c "'$CLOAK' -v '$HELLO' 2>/tmp/cloak-pipe-$$.err | head -c 1 >/dev/null; echo \${PIPESTATUS[0]}; cat /tmp/cloak-pipe-$$.err; rm -f /tmp/cloak-pipe-$$.err"
	[[ "${lines[0]}" == 0 ]] || { echo "$output"; return 1; }
	[[ "$output" == *"guest exited with status 0"* ]]
	[[ "$output" == *"guest memory wiped"* ]]
}

@test "the guest's CPUID shows what it uses and nothing of the host's virtualization" {
	need_kvm
	run_cloak "$GUESTS/trap.elf" cpuid
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ "$output" == *"cpuid: max_basic=7 hypervisor=0 vmx=0 svm=0 nx=1 kvm_signature=no "* ]] ||
		{ echo "$output"; return 1; }
	# Never AVX or OSXSAVE (they need XCR0). AES and PCLMULQDQ only where
	# KVM runs guest code on the CPU, and never where the host lacks them:
	# the filter passes what KVM offers, it adds nothing.
	[[ "$output" == *" avx=0 osxsave=0"* ]] || { echo "$output"; return 1; }
	local flags kind
	flags=" $(grep -m1 -E '^flags[[:space:]]*:' "${CLOAK_CPUINFO:-/proc/cpuinfo}" | cut -d: -f2) "
	kind=$(kvm_kind)
	if [ "$kind" = emulating ] || [[ "$flags" != *" aes "* ]]; then
		[[ "$output" == *" aes=0 "* ]] || { echo "AES offered: $output"; return 1; }
	fi
	if [ "$kind" = emulating ] || [[ "$flags" != *" pclmulqdq "* ]]; then
		[[ "$output" == *" pclmul=0 "* ]] || { echo "PCLMULQDQ offered: $output"; return 1; }
	fi
}

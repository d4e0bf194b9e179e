# SPDX-License-Identifier: ISC
# Shared setup for the integration suites (bats). Paths are relative to the
# repository root; `make check` runs from there.
ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
O=${O:-build}
CLOAK=${CLOAK_BIN:-$ROOT/$O/cloak}
GUESTS=$ROOT/$O/tests/guests
HELLO=$ROOT/$O/examples/hello.elf

# Tests that boot guests need /dev/kvm (and, for the default backend,
# memfd_secret). Without them they SKIP with the reason, unless
# CLOAK_REQUIRE_KVM=1 (CI), when they fail.
need_kvm() {
	local why=""
	[ -c /dev/kvm ] || why="/dev/kvm missing"
	[ -z "$why" ] && [ ! -r /dev/kvm ] && why="/dev/kvm not readable"
	[ -z "$why" ] && [ ! -d /sys/module/secretmem ] && \
		! grep -qw memfd_secret /proc/kallsyms 2>/dev/null && why="memfd_secret unavailable"
	# Secret guest memory is locked memory: without CAP_IPC_LOCK, the
	# suites' 64 MiB guests need RLIMIT_MEMLOCK of at least 64 MiB.
	if [ -z "$why" ]; then
		local capeff lim
		capeff=$(awk '/^CapEff:/ {print $2}' /proc/self/status)
		lim=$(ulimit -H -l)
		if (( (16#${capeff:-0} >> 14 & 1) == 0 )) && [ "$lim" != unlimited ] && [ "$lim" -lt 65536 ]; then
			why="RLIMIT_MEMLOCK hard limit ${lim} KiB is below the 64 MiB test guests (raise it in /etc/security/limits.conf, or run as root)"
		fi
	fi
	if [ -n "$why" ]; then
		if [ "${CLOAK_REQUIRE_KVM:-0}" = 1 ]; then
			echo "CLOAK_REQUIRE_KVM=1 but $why" >&2
			return 1
		fi
		skip "$why"
	fi
}

# kvm_kind: "hardware" where KVM runs guest code natively (VMX/SVM), else
# "emulating" (its instruction emulator runs guest code).
kvm_kind() {
	local kind=emulating
	grep -E '^flags[[:space:]]*:' /proc/cpuinfo | grep -qwE 'vmx|svm' && kind=hardware
	echo "$kind"
}

# need_root: tests that act as root (attacks, namespaces, other users)
# SKIP without it, or FAIL under CI.
need_root() {
	if [ "$(id -u)" != 0 ]; then
		[ "${CLOAK_REQUIRE_KVM:-0}" = 1 ] && { echo "this test needs root" >&2; return 1; }
		skip "needs root"
	fi
}

# run_cloak ARGS...: runs the monitor with a safety timeout so a broken
# build cannot hang the suite; output and status land in $output/$status.
run_cloak() {
	run timeout "${CLOAK_TEST_TIMEOUT:-60}" "$CLOAK" "$@"
}

# One line of stderr-style message: the monitor's errors start with "cloak: ".
assert_one_error_line() {
	local n
	n=$(printf '%s\n' "$output" | grep -c '^cloak: ')
	[ "$n" -ge 1 ] || { echo "no 'cloak:' error line in: $output"; return 1; }
}

# SPDX-License-Identifier: ISC
# Shared setup for the integration suites (bats). Paths are relative to the
# repository root; `make check` runs from there.
ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
O=${O:-build}
CLOAK=${CLOAK_BIN:-$ROOT/$O/cloak}
# CLOAK_TEST_MEMORY=BACKEND (secret, gmem, shared): every monitor run in the
# suites that names no backend itself uses BACKEND instead of the default;
# the SVM tier runs the suites once per backend so. $CLOAK is then a
# wrapper (tests/integration/cloak-memory); $CLOAK_REAL is the monitor.
CLOAK_REAL=$CLOAK
if [ -n "${CLOAK_TEST_MEMORY:-}" ]; then
	export CLOAK_REAL CLOAK_TEST_MEMORY
	CLOAK=$ROOT/tests/integration/cloak-memory
fi
GUESTS=$ROOT/$O/tests/guests
HELLO=$ROOT/$O/examples/hello.elf

# Tests that boot guests need /dev/kvm (and, for the default backend,
# memfd_secret). Without them they SKIP with the reason, unless
# CLOAK_REQUIRE_KVM=1 (CI), when they fail; on a CI machine that has no
# /dev/kvm at all, .ci/run says so in CLOAK_HOST_NO_KVM and these tests
# run in the SVM tier instead (docs/svm-tier.md).
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
		# CLOAK_HOST_NO_KVM (set by .ci/run only where /dev/kvm does not
		# exist, with the kernel's reason) lets exactly that absence skip.
		if [ "$why" = "/dev/kvm missing" ] && [ -n "${CLOAK_HOST_NO_KVM:-}" ]; then
			skip "$why: $CLOAK_HOST_NO_KVM"
		fi
		if [ "${CLOAK_REQUIRE_KVM:-0}" = 1 ]; then
			echo "CLOAK_REQUIRE_KVM=1 but $why" >&2
			return 1
		fi
		skip "$why"
	fi
}

# need_backend BACKEND: the test is about one memory backend (its
# protections or its errors). A run that selected another backend with
# CLOAK_TEST_MEMORY skips it, saying so: that is the run's choice, not
# something the host lacks, so it stays a skip under CLOAK_REQUIRE_KVM=1.
need_backend() {
	if [ -n "${CLOAK_TEST_MEMORY:-}" ] && [ "$CLOAK_TEST_MEMORY" != "$1" ]; then
		skip "about --memory=$1; this run tests --memory=$CLOAK_TEST_MEMORY (CLOAK_TEST_MEMORY)"
	fi
}

# kvm_kind: how this host's KVM runs guest code, which decides what some
# guest instructions do: "hardware" when the CPU has VMX or SVM (the CPU
# runs the guest; vmcall returns to it, SSE arithmetic works), else
# "emulating" (KVM's instruction emulator runs every guest instruction, as
# on hosts with a KVM built on shadow paging and no VMX/SVM: vmcall wedges
# KVM_RUN, SSE arithmetic is an internal error). Reads the flags lines of
# ${CLOAK_CPUINFO:-/proc/cpuinfo}. CLOAK_KVM_KIND, when set (the SVM tier
# sets it), is what the runner knows: a disagreement is an error, so a
# detection that goes wrong cannot quietly move tests to the other kind.
kvm_kind() {
	local kind=emulating
	grep -E '^flags[[:space:]]*:' "${CLOAK_CPUINFO:-/proc/cpuinfo}" | grep -qwE 'vmx|svm' && kind=hardware
	if [ -n "${CLOAK_KVM_KIND:-}" ] && [ "$CLOAK_KVM_KIND" != "$kind" ]; then
		echo "CLOAK_KVM_KIND=$CLOAK_KVM_KIND but ${CLOAK_CPUINFO:-/proc/cpuinfo} says $kind" >&2
		return 1
	fi
	echo "$kind"
}

# need_native_cpu WHERE: the test needs a KVM that runs guest code on the
# CPU (VMX/SVM). Without a usable KVM at all, need_kvm names what is
# missing (/dev/kvm, its permissions...), not a kind of KVM this host does
# not have; with one that emulates guest code the skip says so, WHERE
# saying what would go wrong there.
need_native_cpu() {
	need_kvm
	[ "$(kvm_kind)" = hardware ] ||
		skip "this host's KVM emulates guest code, $1; the SVM tier runs this"
}

# check_json: `cloak check --json` of this host, asked once per run.
check_json() {
	local cache=${BATS_RUN_TMPDIR:-/tmp}/cloak-check.json
	[ -s "$cache" ] || "$CLOAK_REAL" check --json >"$cache" 2>/dev/null
	cat "$cache"
}

# auto_backend: the backend --memory=auto picks on this host, or "none"
# where it refuses (monitor/mem/select.h), as `cloak check` reports it.
auto_backend() {
	local b
	b=$(check_json | jq -r '.default.backend')
	[ -n "$b" ] && [ "$b" != null ] || b=none
	echo "$b"
}

# gmem_gives_up: whether the monitor gives a guest_memfd up at PROTECT
# here (unmaps the private pages, closes the descriptor): where KVM runs
# guest code natively and steps over intercepted instructions without
# decoding them from guest memory (VMX; SVM with next-RIP save). As
# `cloak check` reports it: gmem promises "hidden from the monitor".
gmem_gives_up() {
	[ "$(check_json | jq -r '.backends[] | select(.name == "gmem") | .protections[]
		| select(.id == "hidden_from_monitor") | .promised')" = true ]
}

# MEMORY_ARGS: the backend a run selected (CLOAK_TEST_MEMORY), for monitor
# binaries the wrapper does not cover (the test build, $HOOKS).
MEMORY_ARGS=(${CLOAK_TEST_MEMORY:+"--memory=$CLOAK_TEST_MEMORY"})

# need_cmd COMMAND PACKAGE: the test drives COMMAND; without it, SKIP
# naming the Debian package, or fail under CLOAK_REQUIRE_KVM=1 (CI installs
# every package the tests use: .ci/packages).
need_cmd() {
	command -v "$1" >/dev/null && return 0
	if [ "${CLOAK_REQUIRE_KVM:-0}" = 1 ]; then
		echo "CLOAK_REQUIRE_KVM=1 but $1 is not installed (apt-get install $2)" >&2
		return 1
	fi
	skip "$1 is not installed (apt-get install $2)"
}

# need_root: tests that act as root (attacks, namespaces, other users)
# SKIP without it, or FAIL under CI.
need_root() {
	if [ "$(id -u)" != 0 ]; then
		[ "${CLOAK_REQUIRE_KVM:-0}" = 1 ] && { echo "this test needs root" >&2; return 1; }
		skip "needs root"
	fi
}

# free_port: a TCP port on 127.0.0.1 that was free when asked.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_sshd: a throwaway sshd on a free loopback port ($PORT), as root,
# with no system configuration (-f /dev/null), a temporary host key that
# $TMP/known_hosts names, and $TMP/authorized_keys; its pid joins PIDS
# (the key services' suites: ssh against the agent, ssh -I the module).
start_sshd() {
	[ "$(id -u)" = 0 ] || { [ "${CLOAK_REQUIRE_KVM:-0}" = 1 ] && return 1; skip "sshd needs root"; }
	[ -x /usr/sbin/sshd ] || { echo "no /usr/sbin/sshd: apt-get install openssh-server"; return 1; }
	mkdir -p /run/sshd # privilege separation directory, as Debian's service makes it
	ssh-keygen -q -t ed25519 -N '' -f "$TMP/hostkey"
	PORT=$(free_port)
	echo "[127.0.0.1]:$PORT $(cat "$TMP/hostkey.pub")" > "$TMP/known_hosts"
	timeout 300 /usr/sbin/sshd -D -e -f /dev/null -o ListenAddress=127.0.0.1 -o Port="$PORT" \
		-o HostKey="$TMP/hostkey" -o AuthorizedKeysFile="$TMP/authorized_keys" \
		-o PidFile=none -o StrictModes=no -o UsePAM=no -o PasswordAuthentication=no \
		-o KbdInteractiveAuthentication=no -o PermitRootLogin=prohibit-password \
		-o MaxAuthTries=3 -o LoginGraceTime=120 > "$TMP/sshd.log" 2>&1 &
	PIDS+=($!)
	for _ in $(seq 100); do
		grep -q 'Server listening' "$TMP/sshd.log" && return 0
		sleep 0.1
	done
	cat "$TMP/sshd.log"
	return 1
}

# run_cloak ARGS...: runs the monitor with a safety timeout so a broken
# build cannot hang the suite; output and status land in $output/$status.
# wait_for_line PID FILE PATTERN: waits until FILE has a line matching
# PATTERN (grep's), PID has exited, or 60 s have passed; fails, printing
# FILE, unless the line came.
wait_for_line() {
	for _ in $(seq 600); do
		grep -q -- "$3" "$2" 2>/dev/null && return 0
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	grep -q -- "$3" "$2" 2>/dev/null || { cat "$2"; return 1; }
}

# wait_for_socket PATH: until a Unix socket is at PATH, up to 60 s (a
# helper process started in the SVM tier's VM, whose CPU QEMU emulates,
# beside a second VM, once took over 5 s); says so and fails if none came.
wait_for_socket() {
	for _ in $(seq 600); do
		[ -S "$1" ] && return 0
		sleep 0.1
	done
	echo "no socket at $1 after 60 s"
	return 1
}

run_cloak() {
	run timeout "${CLOAK_TEST_TIMEOUT:-60}" "$CLOAK" "$@"
}

# One line of stderr-style message: the monitor's errors start with "cloak: ".
assert_one_error_line() {
	local n
	n=$(printf '%s\n' "$output" | grep -c '^cloak: ')
	[ "$n" -ge 1 ] || { echo "no 'cloak:' error line in: $output"; return 1; }
}

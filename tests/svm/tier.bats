#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The SVM tier's own logic, on the host (no VM, no network): the apt entry
# it derives for another suite, the backend a test run selects, the kind
# of KVM the suites detect, what the tier does when it cannot run, and how
# its VM takes the mutants staged beside the host's (run-mutants --staged),
# and the summary check-svm ends with.
bats_require_minimum_version 1.5.0
load ../integration/helpers

setup() {
	. "$ROOT/tests/svm/svm-lib.bash"
	T=$BATS_TEST_TMPDIR
}

@test "a trixie-backports entry keeps the machine's archive, components and keyring (deb822)" {
	cat >"$T/debian.sources" <<-'EOF'
	# a comment
	Types: deb
	URIs: http://mirror.example/debian
	Suites: bookworm bookworm-updates
	Components: main contrib
	Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

	Types: deb
	URIs: http://mirror.example/debian-security
	Suites: bookworm-security
	Components: main
	EOF
	SVM_CODENAME=bookworm run svm_derive_sources trixie-backports "$T/debian.sources"
	[ "$status" -eq 0 ]
	[ "$output" = "Types: deb
URIs: http://mirror.example/debian
Suites: trixie-backports
Components: main contrib
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" ] || { echo "$output"; return 1; }
}

@test "the derived entry skips disabled and deb-src stanzas and keeps an inline key" {
	cat >"$T/debian.sources" <<-'EOF'
	Types: deb
	URIs: http://off.example/debian
	Suites: bookworm
	Components: main
	Enabled: no

	Types: deb-src
	URIs: http://src.example/debian
	Suites: bookworm
	Components: main

	Types: deb
	URIs: http://on.example/debian
	Suites: bookworm
	Components: main
	Signed-By:
	 -----BEGIN PGP PUBLIC KEY BLOCK-----
	 .
	 -----END PGP PUBLIC KEY BLOCK-----
	EOF
	SVM_CODENAME=bookworm run svm_derive_sources trixie-backports "$T/debian.sources"
	[ "$status" -eq 0 ]
	[[ "$output" == *"URIs: http://on.example/debian"* ]] || { echo "$output"; return 1; }
	[[ "$output" != *off.example* && "$output" != *src.example* ]] || { echo "$output"; return 1; }
	[[ "$output" == *$'\n -----END PGP PUBLIC KEY BLOCK-----'* ]] || { echo "$output"; return 1; }
}

@test "a trixie-backports entry from a one-line sources.list changes only the suite" {
	printf '%s\n' "deb-src http://a.example/debian bookworm main" \
		"deb [arch=amd64 signed-by=/k.gpg] http://b.example/debian bookworm main non-free" \
		"deb http://c.example/debian bookworm main" >"$T/sources.list"
	SVM_CODENAME=bookworm run svm_derive_sources trixie-backports "$T/sources.list"
	[ "$status" -eq 0 ]
	[ "$output" = "deb [arch=amd64 signed-by=/k.gpg] http://b.example/debian trixie-backports main non-free" ] ||
		{ echo "$output"; return 1; }
}

@test "no entry for the machine's own release: derivation fails, printing nothing" {
	printf 'deb http://a.example/debian bullseye main\n' >"$T/sources.list"
	SVM_CODENAME=bookworm run svm_derive_sources trixie-backports "$T/sources.list"
	[ "$status" -eq 1 ]
	[ -z "$output" ]
}

@test "CLOAK_TEST_MEMORY puts its backend first; a test's own --memory comes later and wins; check passes through" {
	printf '#!/bin/sh\necho "$@"\n' >"$T/fake-cloak"
	chmod +x "$T/fake-cloak"
	export CLOAK_REAL=$T/fake-cloak CLOAK_TEST_MEMORY=gmem
	run "$ROOT/tests/integration/cloak-memory" -v g.elf -- a
	[ "$output" = "--memory=gmem -v g.elf -- a" ] || { echo "$output"; return 1; }
	run "$ROOT/tests/integration/cloak-memory" --memory=shared g.elf
	[ "$output" = "--memory=gmem --memory=shared g.elf" ] || { echo "$output"; return 1; }
	run "$ROOT/tests/integration/cloak-memory" check --json
	[ "$output" = "check --json" ] || { echo "$output"; return 1; }
}

@test "the monitor honours the last --memory (what the wrapper relies on)" {
	need_kvm
	run_cloak -v --memory=gmem --memory=shared "$HELLO"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ "$output" == *"guest memory: shared: "* ]] || { echo "$output"; return 1; }
}

@test "kvm_kind: svm or vmx in the CPU flags is hardware, neither is emulating" {
	printf 'processor\t: 0\nflags\t\t: fpu sse2 svm npt\n' >"$T/svm"
	printf 'processor\t: 0\nflags\t\t: fpu vmx ept\n' >"$T/vmx"
	printf 'processor\t: 0\nmodel name\t: vmx svm in a name only\nflags\t\t: fpu sse2 hypervisor\n' >"$T/none"
	unset CLOAK_KVM_KIND
	[ "$(CLOAK_CPUINFO=$T/svm kvm_kind)" = hardware ]
	[ "$(CLOAK_CPUINFO=$T/vmx kvm_kind)" = hardware ]
	[ "$(CLOAK_CPUINFO=$T/none kvm_kind)" = emulating ]
}

@test "kvm_kind fails when it disagrees with what the runner knows (CLOAK_KVM_KIND)" {
	printf 'flags\t\t: fpu sse2\n' >"$T/none"
	CLOAK_CPUINFO=$T/none CLOAK_KVM_KIND=hardware run kvm_kind
	[ "$status" -eq 1 ]
	[[ "$output" == *"CLOAK_KVM_KIND=hardware but $T/none says emulating"* ]]
	CLOAK_CPUINFO=$T/none CLOAK_KVM_KIND=emulating run kvm_kind
	[ "$status" -eq 0 ]
	[ "$output" = emulating ]
}

@test "check-svm without QEMU: SKIP with the reason, or FAILED under CLOAK_REQUIRE_KVM=1" {
	CLOAK_REQUIRE_KVM=0 SVM_QEMU=no-such-qemu run "$ROOT/tests/svm/run-svm"
	[ "$status" -eq 0 ]
	[ "$output" = "check-svm: SKIP: no-such-qemu not found; install Debian's qemu-system-x86 (apt-get install qemu-system-x86, or make: .ci/packages)" ] ||
		{ echo "$output"; return 1; }
	CLOAK_REQUIRE_KVM=1 SVM_QEMU=no-such-qemu run "$ROOT/tests/svm/run-svm"
	[ "$status" -eq 1 ]
	[[ "$output" == "check-svm: FAILED: no-such-qemu not found; "*"(CLOAK_REQUIRE_KVM=1)" ]] || { echo "$output"; return 1; }
}

@test "check-svm without a kernel to boot: SKIP with the reason, or FAILED under CLOAK_REQUIRE_KVM=1" {
	need_cmd qemu-system-x86_64 qemu-system-x86
	printf 'deb http://a.example/debian bullseye main\n' >"$T/sources.list"
	export CLOAK_SVM_CACHE=$T/cache SVM_APT_SOURCES=$T/sources.list SVM_CODENAME=bookworm
	CLOAK_REQUIRE_KVM=0 run "$ROOT/tests/svm/run-svm" 7@trixie-backports
	[ "$status" -eq 0 ]
	[[ "$output" == "check-svm: SKIP: no 7 kernel: fetch-kernel: cannot derive an apt entry for trixie-backports from $T/sources.list"* ]] ||
		{ echo "$output"; return 1; }
	CLOAK_REQUIRE_KVM=1 run "$ROOT/tests/svm/run-svm" 7@trixie-backports
	[ "$status" -eq 1 ]
	[[ "$output" == "check-svm: FAILED: no 7 kernel: "* ]] || { echo "$output"; return 1; }
}

@test "a kernel's part is demo, base, kernel, token, agent or system; any other is a one-line error before a VM starts" {
	need_cmd qemu-system-x86_64 qemu-system-x86
	run "$ROOT/tests/svm/run-svm" 7@trixie-backports:bogus
	[ "$status" -eq 1 ]
	[ "$output" = "run-svm: unknown part :bogus in 7@trixie-backports:bogus (demo, base, kernel, agent, token or system)" ] ||
		{ echo "$output"; return 1; }
}

@test "a series takes only its own cached kernels: 6.1 is not 6.12, 7 is not 70" {
	svm_of_series 6.1 "$T/default/6.1.0-57-amd64_6.1.192-3"
	svm_of_series 6.12 "$T/default/6.12.118+deb12-amd64_6.12.118-1~deb12u1"
	svm_of_series 7 "7.3.4+deb13-amd64_7.3.4-1~bpo13+1"
	run ! svm_of_series 6.1 "$T/default/6.12.118+deb12-amd64_6.12.118-1~deb12u1"
	run ! svm_of_series 6.12 "6.1.0-57-amd64_6.1.192-3"
	run ! svm_of_series 7 "70.1.0+x-amd64_70.1.0-1"
}

@test "a stage still being filled: run-mutants --staged takes each mutant as it appears, in order, until .done" {
	# What the tier's VM does beside the host's mutants (run-mutants --svm):
	# a is never staged (decided on the build machine), b is, c neither.
	s=$T/stage
	mkdir "$s"
	printf 'a\nb\nc\n' >"$s/order"
	printf '@test "passes" { true; }\n' >"$T/pass.bats"
	(
		sleep 2
		mkdir "$s/.b" && echo "$T/pass.bats" >"$s/.b/run" && mv "$s/.b" "$s/b"
		sleep 2
		: >"$s/.done"
	) &
	run timeout 60 "$ROOT/tests/mutants/run-mutants" --staged "$s"
	wait
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[ "$(grep '^MUTANT' <<<"$output")" = "$(printf 'MUTANT\tb\tbad\tNOT CAUGHT by %s' "$T/pass.bats")" ] ||
		{ echo "$output"; return 1; }
}

@test "check-svm's summary: one line a run, its parts' counts added up, a part with no results a failure" {
	# What run-svm prints last, from each VM's summary file (a pool of the
	# default parts' shapes: a key service's, the system suite's, a demo).
	results=$T/svm mode=check
	k7=$T/k7 k61=$T/k61
	mkdir -p "$k7" "$k61"
	echo "7.3.4+deb13-amd64 7.3.4-1~bpo13+1" >"$k7/version"
	echo "6.1.0-57-amd64 6.1.192-3" >"$k61/version"
	mkdir -p "$results/7.3.4+deb13-amd64.token" "$results/7.3.4+deb13-amd64.system" \
		"$results/7.3.4+deb13-amd64.agent" "$results/6.1.0-57-amd64"
	printf '%s\n' "secret: not applicable: exit 249: cloak: no" "gmem: 44 passed, 0 failed, 1 skipped in 756 s" \
		>"$results/7.3.4+deb13-amd64.token/summary"
	echo 767 >"$results/7.3.4+deb13-amd64.token/seconds"
	printf '%s\n' "install: 4 passed, 0 failed, 0 skipped in 61 s" "lifecycle: 4 passed, 1 failed, 0 skipped in 229 s" \
		>"$results/7.3.4+deb13-amd64.system/summary"
	printf '%s\n' "make demo: passed (exit 0, backend shared)" "demo: 4 passed, 0 failed, 0 skipped" \
		"cloak check: passed (exit 1, default none)" >"$results/6.1.0-57-amd64/summary"
	final=() rc=0
	runs=("$(svm_run "$k7" check "" token 7@trixie-backports:token)"
		"$(svm_run "$k7" system "" system 7@trixie-backports:system)"
		"$(svm_run "$k7" check "" agent 7@trixie-backports:agent)"
		"$(svm_run "$k61" demo "" "" 6.1:demo)")
	svm_summarize_runs "${runs[@]}" >/dev/null
	[ "$rc" = 1 ]
	[ "${#final[@]}" = 4 ]
	[ "${final[0]}" = "svm 7.3.4+deb13-amd64 token (7.3.4-1~bpo13+1): 44 passed, 0 failed, 1 skipped (secret n/a, gmem) in 767 s" ] ||
		{ printf '%s\n' "${final[@]}"; return 1; }
	[ "${final[1]}" = "svm 7.3.4+deb13-amd64 system (7.3.4-1~bpo13+1): 8 passed, 1 failed, 0 skipped (install, lifecycle) in ? s" ] ||
		{ printf '%s\n' "${final[@]}"; return 1; }
	[ "${final[2]}" = "svm 7.3.4+deb13-amd64 agent (7.3.4-1~bpo13+1): 0 passed, 1 failed, 0 skipped (no results) in ? s" ] ||
		{ printf '%s\n' "${final[@]}"; return 1; }
	[ "${final[3]}" = "svm 6.1.0-57-amd64 (6.1.192-3): 6 passed, 0 failed, 0 skipped (make demo, demo, cloak check) in ? s" ] ||
		{ printf '%s\n' "${final[@]}"; return 1; }
	# With every part's results there and passing, rc stays 0.
	echo "gmem: 25 passed, 0 failed, 1 skipped in 304 s" >"$results/7.3.4+deb13-amd64.agent/summary"
	echo "lifecycle: 5 passed, 0 failed, 0 skipped in 229 s" >"$results/7.3.4+deb13-amd64.system/summary"
	final=() rc=0
	svm_summarize_runs "${runs[@]}" >/dev/null
	[ "$rc" = 0 ] || { printf '%s\n' "${final[@]}"; return 1; }
}

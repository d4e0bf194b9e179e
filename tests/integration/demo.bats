#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# `make demo` (scripts/demo), the README's first command: it boots hello
# with the strongest protection the host runs, or, where none runs, says so
# and boots it with --memory=shared; it then says what holds. A plain
# `cloak GUEST` keeps its rule meanwhile: never unprotected unless asked.
# The SVM tier runs this suite on Debian's 6.1, 6.12 and 7.x kernels.
bats_require_minimum_version 1.5.0
load helpers

# has_line TEXT: $output has TEXT as a whole line.
has_line() {
	grep -qxF -- "$1" <<<"$output" || { echo "no line \"$1\" in: $output"; return 1; }
}

demo() {
	run timeout 300 env O="$O" CLOAK="$CLOAK_REAL" "$ROOT/scripts/demo"
}

@test "make demo boots hello with the strongest backend this host runs, and says what holds" {
	need_kvm
	cd "$ROOT"
	demo
	[ "$status" -eq 0 ] || { echo "$status: $output"; return 1; }
	[[ "$output" == *"Hello from a cloak guest!"* ]] || { echo "$output"; return 1; }
	[[ "$output" == *"   holds: "* ]] || { echo "$output"; return 1; }
	[[ "$output" == *"   more, with how each was observed: $CLOAK_REAL check"* ]] || { echo "$output"; return 1; }
	local b; b=$(auto_backend)
	if [ "$(check_json | jq -r '.default.runs')" = true ]; then
		[[ "$output" == *"guest memory: $b"* ]] || { echo "$output"; return 1; }
		[[ "$output" == *"   backend: $b (protected, the default here)"* ]] || { echo "$output"; return 1; }
		[[ "$output" != *"no protected backend runs"* ]] || { echo "$output"; return 1; }
	else
		[[ "$output" == *"demo: no protected "*" runs on this host: "* ]] || { echo "$output"; return 1; }
		[[ "$output" == *"guest memory: shared"* ]] || { echo "$output"; return 1; }
		[[ "$output" == *"   backend: shared (UNPROTECTED: no protected backend runs here)"* ]] || { echo "$output"; return 1; }
		# Each stronger backend gets its reason.
		[[ "$output" == *"   secret: not used here: "* ]] || { echo "$output"; return 1; }
		[[ "$output" == *"   gmem: not used here: "* ]] || { echo "$output"; return 1; }
	fi
}

@test "a plain cloak GUEST never runs unprotected where no protected backend runs" {
	need_kvm
	if [ "$(check_json | jq -r '.default.runs')" = true ]; then
		run timeout 60 "$CLOAK_REAL" -v "$HELLO"
		[ "$status" -eq 0 ] || { echo "$status: $output"; return 1; }
		[[ "$output" != *"guest memory: shared"* ]] || { echo "$output"; return 1; }
		[[ "$output" == *"guest memory: $(auto_backend)"* ]] || { echo "$output"; return 1; }
	else
		run timeout 60 "$CLOAK_REAL" "$HELLO"
		[ "$status" -eq 249 ] || { echo "$status: $output"; return 1; }
		[[ "$output" != *"Hello from a cloak guest"* ]] || { echo "$output"; return 1; }
		[[ "$output" == "cloak: "*"use --memory=shared"* ]] || { echo "$output"; return 1; }
	fi
}

@test "make demo where no protected backend runs: says why, and runs hello with --memory=shared" {
	# A stand-in monitor whose `check` reports a host like Debian 12's 6.1
	# on SVM (what the SVM tier sees there), and which logs every run.
	local fake=$BATS_TEST_TMPDIR/cloak
	cat >"$fake" <<-EOF
	#!/bin/sh
	echo "\$*" >>"$BATS_TEST_TMPDIR/runs"
	if [ "\$1" = check ]; then
		cat <<'J'
	{"host":{"kernel":"Linux 6.1.0-57-amd64","kvm":true,"kvm_kind":"hardware"},
	 "default":{"backend":null,"runs":false,"why_not":"memfd_secret memory cannot back a KVM guest here"},
	 "backends":[{"name":"secret","available":true,"reason":"","protections":[
	   {"id":"kvm_run","title":"KVM runs a guest from it","result":"no","how":"KVM_RUN failed with EFAULT"}]},
	  {"name":"gmem","available":false,"reason":"no guest_memfd (KVM_CAP_GUEST_MEMFD)","protections":[]},
	  {"name":"shared","available":true,"reason":"","protections":[
	   {"id":"fork","title":"not inherited on fork","result":"yes","how":"x"},
	   {"id":"direct_map","title":"out of the kernel direct map","result":"no","how":"y"}]}]}
	J
		exit 1
	fi
	echo "Hello from a cloak guest!"
	EOF
	chmod +x "$fake"
	run env O="$O" CLOAK="$fake" "$ROOT/scripts/demo"
	[ "$status" -eq 0 ] || { echo "$status: $output"; return 1; }
	[ "$(sed -n 2p "$BATS_TEST_TMPDIR/runs")" = "--verbose --memory=shared $O/examples/hello.elf -- from the cloak demo" ] ||
		{ cat "$BATS_TEST_TMPDIR/runs"; return 1; }
	[ "$(grep -c '' "$BATS_TEST_TMPDIR/runs")" -eq 2 ] || { cat "$BATS_TEST_TMPDIR/runs"; return 1; }
	has_line "demo: no protected backend runs on this host: memfd_secret memory cannot back a KVM guest here"
	has_line "   backend: shared (UNPROTECTED: no protected backend runs here)"
	has_line "   holds: not inherited on fork"
	has_line "   does NOT hold: out of the kernel direct map"
	has_line "   secret: not used here: KVM_RUN failed with EFAULT"
	has_line "   gmem: not used here: no guest_memfd (KVM_CAP_GUEST_MEMFD)"
}

@test "make demo without /dev/kvm: cloak's one-line error and status 249" {
	need_cmd unshare util-linux
	cd "$ROOT"
	# A private mount namespace where /dev is a tmpfs with /dev/null only.
	run unshare --mount sh -c "mount -t tmpfs none /dev && mknod -m 666 /dev/null c 1 3 &&
		exec env O='$O' CLOAK='$CLOAK_REAL' scripts/demo"
	if [[ "$output" == *"mount"*"ermission"* || "$output" == *"unshare failed"* ]]; then
		skip "cannot create a mount namespace here"
	fi
	[ "$status" -eq 249 ] || { echo "$status: $output"; return 1; }
	[ "${#lines[@]}" -eq 1 ] || { echo "$output"; return 1; }
	[[ "$output" == "cloak: /dev/kvm does not exist"* ]] || { echo "$output"; return 1; }
}

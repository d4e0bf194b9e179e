#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Running out of secret memory ends in NULL and libcloak's RLIMIT_MEMLOCK
# message, never in a signal, whichever way the kernel charges secret pages
# to the lock limit: at mmap (EAGAIN), or per user at the first touch of a
# page (a store past the limit is a SIGBUS). Without CAP_IPC_LOCK, under a
# 1 MiB and the stock 8 MiB limit, for one process and for two processes of
# one user at once (which share that user's budget where the charge is per
# user). tests/svm/in-vm runs this suite on Debian's kernels too. On any
# kernel: what makes that hold, every page faulted in before it is handed
# out.

setup() {
	load helpers
	libcloak_setup
	USER_PROG="$BUILD/tests/libcloak/exhaust_user"
	[ -x "$USER_PROG" ] || skip "no $USER_PROG: build first (make)"
}

# exhaust KIB PROCS: exhaust_user under `ulimit -l KIB`, without
# CAP_IPC_LOCK (dropped by setpriv as root; an ordinary user has none).
exhaust() {
	local hard
	hard=$(ulimit -H -l)
	if [ "$hard" != unlimited ] && [ "$hard" -lt "$1" ] && [ "$(id -u)" != 0 ]; then
		skip "the hard lock limit ($hard KiB) is below $1 KiB: raise it (limits.conf memlock)"
	fi
	local cmd=(bash -c 'ulimit -l "$0" && exec "$@"' "$1" "$USER_PROG" "$2")
	if [ "$(id -u)" = 0 ]; then
		cmd=(setpriv --bounding-set=-ipc_lock,-sys_resource --inh-caps=-ipc_lock,-sys_resource "${cmd[@]}")
	elif (((16#$(awk '/^CapEff/ {print $2}' /proc/self/status) >> 14) & 1)); then
		skip "this user has CAP_IPC_LOCK, so the lock limit does not apply: run as root or as a user without it"
	fi
	run timeout 300 "${cmd[@]}"
	echo "$output"
	sed 's/^/# /' <<<"$output" >&3 # how far each got, in the log of a passing run too
	[ "$status" -eq 0 ]
	[ "$(grep -c 'then NULL: RLIMIT_MEMLOCK exhausted' <<<"$output")" -eq "$2" ]
}

@test "one process runs out of a 1 MiB lock limit with NULL and the message" {
	exhaust 1024 1
}

@test "one process runs out of the stock 8 MiB lock limit with NULL and the message" {
	exhaust 8192 1
}

@test "two processes of one user run out of a 1 MiB lock limit with NULL and the message" {
	exhaust 1024 2
}

@test "two processes of one user run out of the stock 8 MiB lock limit with NULL and the message" {
	exhaust 8192 2
}

@test "every page of a pooled, a large and a guarded secret is resident when handed out" {
	run "$USER_PROG" --resident
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -c ': 0 pages not resident' <<<"$output")" -eq 3 ]
}

#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# libcloak's environment variables (docs/libcloak.md "Environment"): each
# value is matched without regard to case; a bad one gets exactly one line
# on stderr naming the variable, the value and the accepted values, and the
# documented fallback, never a silent loss of protection. CLOAK_OPENSSL and
# CLOAK_OPENSSL_ALL are tested in openssl.bats.

bats_require_minimum_version 1.5.0

setup() {
	REPO="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
	BUILD="${CLOAK_BUILD_DIR:-$REPO/build}"
	TMP="$(mktemp -d)"
	# What libcloak.so made of its environment, and whether a forked child
	# can read a secret allocated before the fork.
	cat >"$TMP/envinfo.c" <<-'C'
	#include <cloak/secret.h>
	#include <stdio.h>
	#include <string.h>
	#include <sys/wait.h>
	#include <unistd.h>
	int main(void)
	{
		struct cloak_secret_info i;
		char *k = cloak_secret_alloc(32);
		if (!k || cloak_secret_info(&i) != 0)
			return 1;
		strcpy(k, "hunter2");
		printf("fork=%s policy=%d debug=%d backend=%s\n",
		       i.fork_mode == CLOAK_SECRET_FORK_COPY ? "copy" : "drop", i.policy, i.debug,
		       cloak_secret_backend_name(i.backend));
		fflush(stdout);
		pid_t c = fork();
		if (c == 0) {
			printf("child read %s\n", k); /* faults in DROP mode */
			fflush(stdout);
			_exit(0);
		}
		int st;
		waitpid(c, &st, 0);
		printf("child %s\n", WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "ok" : "died");
		fflush(stdout); /* before the statistics at exit */
		cloak_secret_free(k);
		return 0;
	}
	C
	cc -std=gnu11 -I"$REPO/include" -o "$TMP/envinfo" "$TMP/envinfo.c" "$BUILD/libcloak/libcloak.a" -pthread
}

teardown() {
	rm -rf "$TMP"
}

# envinfo VAR=VALUE...: runs the program with only those CLOAK_ variables;
# its stdout in $output, its stderr in $TMP/err.
envinfo() {
	status=0
	output=$(env -u CLOAK_FORK -u CLOAK_DEBUG -u CLOAK_FALLBACK -u CLOAK_STATS -u CLOAK_TEST_NO_SECRETMEM \
		"$@" "$TMP/envinfo" 2>"$TMP/err") || status=$?
	mapfile -t lines <<<"$output"
	echo "$output"
	cat "$TMP/err"
}

# complained VAR VALUE ACCEPTED FALLBACK: stderr holds exactly one line, the
# one naming the variable, its value, the accepted values and the fallback.
complained() {
	[ "$(grep -c '^libcloak: ' "$TMP/err")" -eq 1 ]
	grep -qxF "libcloak: $1=$2 is not $3; using $4" "$TMP/err"
}

silent() {
	run ! grep '^libcloak: ' "$TMP/err"
}

@test "no CLOAK_ variable: libcloak.so's defaults, nothing on stderr" {
	envinfo
	[ "${lines[0]}" = "fork=drop policy=0 debug=0 backend=memfd_secret" ]
	[ "${lines[1]}" = "child died" ]
	silent
}

@test "CLOAK_FORK: copy and drop in any case; a bad value keeps the default, with one line" {
	envinfo CLOAK_FORK=COPY
	[ "${lines[0]}" = "fork=copy policy=0 debug=0 backend=memfd_secret" ]
	[ "${lines[1]}" = "child read hunter2" ]
	[ "${lines[2]}" = "child ok" ]
	silent
	envinfo CLOAK_FORK=Drop
	[ "${lines[0]}" = "fork=drop policy=0 debug=0 backend=memfd_secret" ]
	silent
	envinfo CLOAK_FORK=banana
	[ "${lines[0]}" = "fork=drop policy=0 debug=0 backend=memfd_secret" ]
	complained CLOAK_FORK banana "drop or copy" "this library's default"
}

@test "CLOAK_FALLBACK: mlock and none; a bad value refuses the fallback, with one line" {
	envinfo CLOAK_FALLBACK=MLOCK
	[ "${lines[0]}" = "fork=drop policy=1 debug=0 backend=memfd_secret" ]
	silent
	envinfo CLOAK_FALLBACK=none
	[ "${lines[0]}" = "fork=drop policy=0 debug=0 backend=memfd_secret" ]
	silent
	envinfo CLOAK_FALLBACK=1
	[ "${lines[0]}" = "fork=drop policy=0 debug=0 backend=memfd_secret" ]
	complained CLOAK_FALLBACK 1 "none or mlock" "none: memfd_secret only, no weaker memory"
	# With no memfd_secret, the bad value does not let weaker memory in.
	envinfo CLOAK_FALLBACK=1 CLOAK_TEST_NO_SECRETMEM=1
	[ "$status" -eq 1 ]
	[ "$(grep -c '^libcloak: CLOAK_FALLBACK=1 is not' "$TMP/err")" -eq 1 ]
}

@test "CLOAK_DEBUG: guard and none; a bad value turns guard mode on, with one line" {
	envinfo CLOAK_DEBUG=GUARD
	[ "${lines[0]}" = "fork=drop policy=0 debug=1 backend=memfd_secret" ]
	silent
	envinfo CLOAK_DEBUG=none
	[ "${lines[0]}" = "fork=drop policy=0 debug=0 backend=memfd_secret" ]
	silent
	envinfo CLOAK_DEBUG=yes
	[ "${lines[0]}" = "fork=drop policy=0 debug=1 backend=memfd_secret" ]
	complained CLOAK_DEBUG yes "none or guard" guard
}

@test "CLOAK_STATS: 1 and 0; a bad value prints the statistics, with one line" {
	envinfo CLOAK_STATS=0
	run ! grep -q '^libcloak stats' "$TMP/err"
	silent
	envinfo CLOAK_STATS=1
	grep -q '^libcloak stats (pid [0-9]*): backend memfd_secret' "$TMP/err"
	silent
	envinfo CLOAK_STATS=yes
	grep -q '^libcloak stats (pid [0-9]*): backend memfd_secret' "$TMP/err"
	complained CLOAK_STATS yes "0 or 1" "1: statistics at exit"
}

@test "CLOAK_TEST_NO_SECRETMEM: a bad value keeps memfd_secret, with one line" {
	envinfo CLOAK_TEST_NO_SECRETMEM=yes
	[ "${lines[0]}" = "fork=drop policy=0 debug=0 backend=memfd_secret" ]
	complained CLOAK_TEST_NO_SECRETMEM yes "0 or 1" "0: memfd_secret is used"
	envinfo CLOAK_TEST_NO_SECRETMEM=1
	[ "$status" -eq 1 ]
}

@test "a long bad value is cut short in its line" {
	envinfo CLOAK_FORK="$(printf 'x%.0s' $(seq 300))"
	[ "$(grep -c '^libcloak: ' "$TMP/err")" -eq 1 ]
	grep -qxF "libcloak: CLOAK_FORK=$(printf 'x%.0s' $(seq 40))... is not drop or copy; using this library's default" "$TMP/err"
}

# SPDX-License-Identifier: ISC
# Shared setup for the threat suites (docs/threat-model.md): the integration
# helpers plus a guest that runs in the background while a test attacks it.
load ../integration/helpers
PROBE=$ROOT/$O/tests/threat-probe

# The attacks below are made by root (the strongest host user short of
# the kernel): need_root (helpers.bash).

# A token per test, so the secret a guest builds from it is new each time.
new_token() {
	TOKEN=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
	REV=$(printf '%s' "$TOKEN" | rev)
}

# start_guest [PREFIX...] -- CLOAK-ARGS...: runs the monitor in the
# background (PREFIX e.g. setpriv ...), output in $GUEST_OUT, pid in
# $MON_PID; waits until the guest prints "ready".
start_guest() {
	local prefix=()
	while [ "$1" != "--" ]; do prefix+=("$1"); shift; done
	shift
	GUEST_OUT=$BATS_TEST_TMPDIR/guest.out
	"${prefix[@]}" "$CLOAK" --timeout=60 "$@" >"$GUEST_OUT" 2>&1 &
	MON_PID=$!
	for _ in $(seq 300); do
		grep -q '^ready' "$GUEST_OUT" && return 0
		kill -0 "$MON_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "guest did not get ready: $(cat "$GUEST_OUT")"
	return 1
}

# stop_guest: SIGTERM (the monitor wipes guest memory and exits 240) and
# wait; $GUEST_STATUS gets the exit status.
stop_guest() {
	kill -TERM "$MON_PID" 2>/dev/null
	GUEST_STATUS=0
	wait "$MON_PID" || GUEST_STATUS=$?
}

# absent NEEDLE FILE...: fails (naming the file) if NEEDLE occurs in any
# FILE, read as bytes. For use anywhere in a test: a bare `! grep` that is
# not a test's last line cannot fail it.
absent() {
	local needle=$1 f
	shift
	for f in "$@"; do
		if grep -qaF -- "$needle" "$f"; then
			echo "found '$needle' in $f"
			return 1
		fi
	done
}

# present NEEDLE FILE...: fails unless NEEDLE occurs in every FILE.
present() {
	local needle=$1 f
	shift
	for f in "$@"; do
		grep -qaF -- "$needle" "$f" || { echo "'$needle' not in $f"; return 1; }
	done
}

# expect_line TEXT: $output has a line that contains TEXT.
expect_line() {
	printf '%s\n' "$output" | grep -qF -- "$1" || { echo "missing '$1' in: $output"; return 1; }
}

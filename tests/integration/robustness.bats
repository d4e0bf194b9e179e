#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Every path ends cleanly: stop requests at any moment, every signal that
# would end the monitor, resource limits, odd files, closed standard
# descriptors, and the terminal. Each test fails on the old behaviour it
# names.
bats_require_minimum_version 1.5.0
load helpers

HOOKS=$ROOT/$O/tests/cloak-hooks
TRAP=$GUESTS/trap.elf

setup() {
	TMP=$(mktemp -d)
}

teardown() {
	[ -n "${PID:-}" ] && kill -9 "$PID" 2>/dev/null || true
	rm -rf "$TMP"
}

@test "a stop request that lands between the POLL exit and the sleep ends the VM at once" {
	need_kvm
	# The test build raises SIGTERM right before the sleep's own check
	# (test_hooks.h); a monitor that lost it would sleep the full 60 s.
	run timeout 20 env CLOAK_TEST_HOOK=signal-before-poll "$HOOKS" "${MEMORY_ARGS[@]}" "$TRAP" sleep 60000
	[ "$status" -eq 240 ] || { echo "$status: $output"; return 1; }
	[[ "$output" == *"interrupted by signal 15"* ]]
	# The same with a channel in the wait set (the epoll path).
	run timeout 20 env CLOAK_TEST_HOOK=signal-before-poll "$HOOKS" "${MEMORY_ARGS[@]}" \
		--channel c=listen:"$TMP/c.sock" "$GUESTS/chan_echo.elf" poll c 60000
	[ "$status" -eq 240 ] || { echo "$status: $output"; return 1; }
}

# A stop request at any moment of start-up, to the process that reaches
# that moment or to the whole process group (as a service manager stops a
# service): the run ends with 240, saying so once. The test build raises
# SIGTERM at the end of the named phase (test_hooks.h); the guest then
# waits on its channel for a peer that never comes, so a request that was
# lost would leave the monitor waiting until the 30 s timeout.
@test "a stop request at any phase of start-up ends the run with 240, said once" {
	need_kvm
	local p how n phases
	for how in signal-at group-signal-at; do
		phases=("signal handlers" "image read and checked" "KVM open" "devices set up"
			"guest memory created" "image loaded" "device process forked" "vCPU set up"
			"boot info, console, watchdog")
		# In their sandboxes the runner and the device process can signal
		# no group (kill(2) is not allowed), so past them only themselves.
		[ "$how" = signal-at ] && phases+=("sandbox entered" "device process entered")
		for p in "${phases[@]}"; do
			rm -f "$TMP/c.sock"
			# setsid: the process group is the monitor's own (runner,
			# device process, path broker), not the test's.
			run timeout 30 setsid -w env CLOAK_TEST_HOOK="$how:$p" "$HOOKS" "${MEMORY_ARGS[@]}" \
				--channel c=listen:"$TMP/c.sock" "$GUESTS/chan_echo.elf" echo c
			[ "$status" -eq 240 ] || { echo "$how:$p: status $status: $output"; return 1; }
			n=$(grep -c 'interrupted by signal 15' <<<"$output")
			[ "$n" -eq 1 ] || { echo "$how:$p: said $n times: $output"; return 1; }
			for _ in $(seq 50); do [ -e "$TMP/c.sock" ] || break; sleep 0.1; done
			[ ! -e "$TMP/c.sock" ] || { echo "$how:$p: socket left behind"; return 1; }
		done
	done
}

@test "the watchdog ends a guest asleep in POLL, with or without devices" {
	need_kvm
	run_cloak --timeout=1 "$TRAP" sleep 60000
	[ "$status" -eq 252 ] || { echo "$status: $output"; return 1; }
	run_cloak --timeout=1 --channel c=listen:"$TMP/c.sock" "$GUESTS/chan_echo.elf" poll c 60000
	[ "$status" -eq 252 ] || { echo "$status: $output"; return 1; }
}

@test "a zero-timeout POLL with nothing to wait for does not sleep" {
	need_kvm
	run_cloak "$TRAP" sleep 0
	[ "$status" -eq 0 ]
	[[ "$output" == *"slept: 0"* ]]
}

@test "--timeout below a millisecond is refused, not taken as no timeout (251)" {
	run_cloak --timeout=0.0001 "$HELLO"
	[ "$status" -eq 251 ]
	[[ "$output" == "cloak: --timeout=0.0001: not a number of seconds from 0.001"* ]]
	run_cloak --timeout=0.000 "$HELLO" # zero spelled long is still "no timeout"
	[ "$status" -ne 251 ]
}

# Signals whose default action would end the process: each is a stop
# request, answered with the wipe and 240.
@test "every signal that would end the monitor is handled: wipe, one line, 240" {
	need_kvm
	for sig in HUP INT QUIT USR1 USR2 ALRM TERM PROF VTALRM XCPU IO PWR ABRT SEGV BUS TRAP SYS RTMIN RTMAX-1; do
		# A new file each time: the last one's "entry" line, read before
		# the shell truncates it for this run, would send the signal before
		# the monitor has set its handlers.
		rm -f "$TMP/err"
		"$CLOAK" -v --timeout=30 "$TRAP" spin 2>"$TMP/err" &
		PID=$!
		for _ in $(seq 50); do grep -qs 'guest .*: entry' "$TMP/err" && break; sleep 0.05; done
		kill -s "$sig" "$PID"
		local rc=0
		wait "$PID" || rc=$?
		PID=
		[ "$rc" -eq 240 ] || { echo "SIG$sig: status $rc: $(cat "$TMP/err")"; return 1; }
		grep -q 'interrupted by signal' "$TMP/err" || { echo "SIG$sig: $(cat "$TMP/err")"; return 1; }
		grep -q 'guest memory wiped' "$TMP/err" || { echo "SIG$sig: no wipe"; return 1; }
	done
}

@test "a block write past the file size limit is an I/O error for the guest, not a SIGXFSZ" {
	need_kvm
	truncate -s 16M "$TMP/d.img"
	# Guest memory is a file too: the limit (8 MiB) leaves room for it.
	run bash -c "ulimit -f 8192; exec timeout 60 '$CLOAK' --mem=4M --block d='$TMP/d.img' '$GUESTS/block_io.elf' write-at d 4096"
	[ "$status" -eq 0 ] || { echo "$status: $output"; return 1; }
	[[ "$output" == *"write at 4096 KiB: 0"* ]]
	# Past the limit (12 MiB), the write fails with EIO (-6): the guest
	# reports it and exits 1; the monitor was not killed (that is 153).
	run bash -c "ulimit -f 8192; exec timeout 60 '$CLOAK' --mem=4M --block d='$TMP/d.img' '$GUESTS/block_io.elf' write-at d 12288"
	[ "$status" -eq 1 ] || { echo "$status: $output"; return 1; }
	[[ "$output" == *"write at 12288 KiB: -6"* ]]
}

@test "a file size limit below --mem is a one-line start-up error (249)" {
	need_kvm
	# The limit applies to the memory files (memfd, memfd_secret); a
	# guest_memfd is sized by KVM, not by a write or ftruncate.
	local b backends=(shared)
	[ "$(auto_backend)" != secret ] || backends+=(secret)
	for b in "${backends[@]}"; do
		run bash -c "ulimit -f 1024; exec timeout 60 '$CLOAK' --memory=$b --mem=64M '$HELLO'"
		[ "$status" -eq 249 ] || { echo "$b: $status: $output"; return 1; }
		[ "$output" = "cloak: cannot create 64 MiB of guest memory: the file size limit (ulimit -f, systemd LimitFSIZE) is lower: raise it or lower --mem" ] ||
			{ echo "$b: $output"; return 1; }
	done
}

@test "a FIFO as guest or block image is refused at once, not waited on" {
	mkfifo "$TMP/fifo"
	run timeout 10 "$CLOAK" "$TMP/fifo"
	[ "$status" -eq 250 ] || { echo "$status: $output"; return 1; }
	[ "$output" = "cloak: guest $TMP/fifo is not a regular file" ]
	need_kvm
	run timeout 10 "$CLOAK" --block d="$TMP/fifo" "$HELLO"
	[ "$status" -eq 247 ] || { echo "$status: $output"; return 1; }
	[ "$output" = "cloak: --block d: $TMP/fifo is not a regular file or block device" ]
	run timeout 10 "$CLOAK" --block d="$TMP/fifo",ro "$HELLO"
	[ "$status" -eq 247 ] || { echo "$status: $output"; return 1; }
}

@test "started with descriptors 0-2 closed, the monitor keeps them on /dev/null" {
	need_kvm
	# Closed, they would be taken by the first files the monitor opens
	# (guest memory among them), and its diagnostics would land there.
	bash -c "exec '$CLOAK' --memory=shared --timeout=30 '$TRAP' spin <&- >&- 2>&-" &
	PID=$!
	local fds=""
	# Until the monitor has mapped guest memory, its own files opened (slow
	# where the host itself is emulated, as in the SVM tier). Not a
	# descriptor number: the shell before its exec may hold inherited ones.
	for _ in $(seq 600); do
		grep -q 'memfd:cloak-guest' "/proc/$PID/maps" 2>/dev/null && break
		sleep 0.05
	done
	for fd in 0 1 2; do
		fds+="$fd=$(readlink "/proc/$PID/fd/$fd" || echo none) "
	done
	kill -TERM "$PID"
	wait "$PID" || true
	PID=
	[ "$fds" = "0=/dev/null 1=/dev/null 2=/dev/null " ] || { echo "$fds"; return 1; }
}

@test "an abort message cannot rewrite the monitor's line: CR, BS, ESC and C1 controls become '?'" {
	need_kvm
	run_cloak "$TRAP" abort-controls
	[ "$status" -eq 255 ]
	[ "$output" = "cloak: guest aborted: spoof?cloak: all fine??[2K?2K??2K" ] ||
		{ printf '%s' "$output" | od -c; return 1; }
}

@test "console output on a terminal is filtered (UTF-8 text kept); to a pipe it is passed as is" {
	need_kvm
	need_cmd script bsdutils
	script -qec "timeout 60 '$CLOAK' '$TRAP' print-controls" /dev/null > "$TMP/tty.out"
	[ "$(head -1 "$TMP/tty.out" | tr -d '\r')" = "A?[31mB?31mC??31mD?E?F?G café ?" ] ||
		{ od -c "$TMP/tty.out"; return 1; }
	timeout 60 "$CLOAK" "$TRAP" print-controls > "$TMP/pipe.out"
	printf 'A\033[31mB\23331mC\302\23331mD\rE\bF\177G caf\303\251 \377\n' > "$TMP/want"
	cmp "$TMP/want" "$TMP/pipe.out"
}

@test "an instruction the emulator cannot run is named in the diagnosis (int3 is not blamed on SSE)" {
	need_kvm
	run_cloak "$TRAP" int3
	if [ "$(kvm_kind)" = emulating ]; then
		[ "$status" -eq 254 ] || { echo "$status: $output"; return 1; }
		[[ "$output" == *"KVM could not emulate int3 (bytes cc"* ]]
		[[ "$output" != *"SSE"* ]]
	else
		# Hardware runs int3: the guest's IDT reports #BP.
		[ "$status" -eq 255 ] || { echo "$status: $output"; return 1; }
		[[ "$output" == *"vector 3 (#BP breakpoint)"* ]]
	fi
}

@test "cloak and cloak check give the same fix for a /dev/kvm the user cannot open" {
	need_root
	need_cmd unshare util-linux
	# A private mount namespace with a /dev of its own, whatever this host
	# has: /dev/kvm there is root's alone (0600), and nobody runs cloak,
	# reaching the monitor and the guest through descriptors opened here
	# (the tree may lie where nobody cannot look).
	local ns="mount -t tmpfs none /dev && mknod -m 666 /dev/null c 1 3 &&
		mknod -m 600 /dev/kvm c 10 232 && exec setpriv --reuid=65534 --regid=65534 --clear-groups"
	run unshare --mount sh -c "$ns /proc/self/fd/9 /proc/self/fd/8" 9<"$CLOAK_REAL" 8<"$HELLO"
	[ "$status" -eq 249 ] || { echo "$status: $output"; return 1; }
	local run_line=$output
	[[ "$run_line" == "cloak: no permission to open /dev/kvm: add yourself to its group"* ]]
	run unshare --mount sh -c "$ns /proc/self/fd/9 check" 9<"$CLOAK_REAL"
	[ "$status" -eq 249 ] || { echo "$status: $output"; return 1; }
	[[ "$output" == *"$run_line"* ]]
	[[ "$output" != *"modprobe"* ]]
}

@test "--dump-shared never overwrites a file: pointed at a disk image, the image is untouched (247)" {
	need_kvm
	head -c 64K /dev/urandom > "$TMP/d.img"
	local before; before=$(sha256sum < "$TMP/d.img")
	run_cloak --block d="$TMP/d.img" --dump-shared="$TMP/d.img" "$HELLO"
	[ "$status" -eq 247 ] || { echo "$status: $output"; return 1; }
	[[ "$output" == "cloak: --dump-shared: cannot create $TMP/d.img: File exists (it is never overwritten"* ]]
	[ "$(sha256sum < "$TMP/d.img")" = "$before" ]
}

@test "errors in what the user named get 247, not 249: typo, in use, read-only without ,ro" {
	need_kvm
	run_cloak --block d="$TMP/typo.img" "$HELLO"
	[ "$status" -eq 247 ]
	truncate -s 64K "$TMP/d.img"
	"$CLOAK" --block d="$TMP/d.img" --timeout=30 "$TRAP" spin & PID=$!
	# The image is open in the device process (the monitor's child), or
	# in the monitor itself with --no-device-isolation.
	for _ in $(seq 100); do
		for p in "$PID" $(pgrep -P "$PID"); do ls -l "/proc/$p/fd" 2>/dev/null; done |
			grep -q d.img && break
		sleep 0.05
	done
	run_cloak --block d="$TMP/d.img" "$HELLO"
	kill -TERM "$PID"; wait "$PID" || true; PID=
	[ "$status" -eq 247 ] || { echo "$status: $output"; return 1; }
	[ "$output" = "cloak: --block d: $TMP/d.img is in use by another process" ]
	need_root
	need_cmd unshare util-linux
	# A read-only mount: opening for writing fails with EROFS.
	mkdir "$TMP/ro"
	cp "$TMP/d.img" "$TMP/ro/"
	run unshare -m bash -c "mount --bind -o ro '$TMP/ro' '$TMP/ro' && exec '$CLOAK' --block d='$TMP/ro/d.img' '$HELLO'"
	[ "$status" -eq 247 ] || { echo "$status: $output"; return 1; }
	[[ "$output" == "cloak: --block d: cannot open $TMP/ro/d.img for writing (add ,ro to attach it read-only): Read-only file system" ]]
	run unshare -m bash -c "mount --bind -o ro '$TMP/ro' '$TMP/ro' && exec '$CLOAK' --block d='$TMP/ro/d.img',ro '$HELLO'"
	[ "$status" -eq 0 ] || { echo "$status: $output"; return 1; }
}

#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The device process changes where calls are answered, not what they
# answer: every conformance and hostile guest of the suites runs under the
# default monitor (device process) and under --no-device-isolation (one
# process), and both must end with the same status and print the same call
# results and the same monitor messages. Where the ABI documents a
# difference (docs/abi.md: with the calls in a device process the shared
# window is fixed at PROTECT, and PROTECT reports CLOAK_PROT_DEVICES_APART),
# the lines that show it are named below and checked apart.
load helpers
bats_require_minimum_version 1.5.0

setup() {
	tmp=$BATS_TEST_TMPDIR
}

# The lines each run is compared on: the guest's output and the monitor's
# own "cloak:" lines, less those that name a process (a device process's
# own failures cannot happen in one process) and the documented difference.
comparable() {
	grep -vE '^(window_fixed=|share_private_page ret=|console_shared_then ret=|share_after_protect ret=|protection[ =])|PRIVATE-SECRET' |
		grep -vE '^cloak: (device process|runner: |devices: )'
}

# differ OPTIONS... -- GUEST ARGS...: both runs, compared.
differ() {
	local opts=() a
	while [ "$1" != -- ]; do opts+=("$1"); shift; done
	shift
	run_cloak "${opts[@]}" "$@"
	local st1=$status out1=$output
	run_cloak --no-device-isolation "${opts[@]}" "$@"
	local st2=$status out2=$output b
	a=$(comparable <<<"$out1")
	b=$(comparable <<<"$out2")
	if [ "$st1" != "$st2" ] || [ "$a" != "$b" ]; then
		echo "$*: device process: status $st1; one process: status $st2"
		diff <(echo "$a") <(echo "$b") || true
		return 1
	fi
	echo "$*: status $st1, $(wc -l <<<"$a") lines alike"
}

@test "every order of SHARE, UNSHARE and PROTECT the ABI allows: same results either way" {
	need_kvm
	local m
	for m in unshare_first share_unshare_protect reshare unshare_after unshare_window; do
		differ -- "$GUESTS/share_order.elf" "$m"
		run_cloak "$GUESTS/share_order.elf" "$m"
		[ "$status" -eq 0 ] || { echo "$m: $output"; return 1; }
	done
	# What each order leaves shared, as the ABI says.
	run_cloak "$GUESTS/share_order.elf" share_unshare_protect
	[[ $output == *"console_page0 ret=8"* && $output == *"console_page1 ret=-3"* &&
		$output == *"console_page2 ret=-3"* && $output == *"console_page3 ret=8"* ]] ||
		{ echo "$output"; return 1; }
	run_cloak "$GUESTS/share_order.elf" unshare_first
	[[ $output == *"unshare ret=0"* && $output == *"protect ret=0"* &&
		$output == *"console_page0 ret=-3"* ]] || { echo "$output"; return 1; }
	run_cloak "$GUESTS/share_order.elf" unshare_window
	[[ $output == *"unshare_window ret=-14"* ]] || { echo "$output"; return 1; }
}

@test "the hostile guest: same codes and the same ends either way" {
	need_kvm
	local m
	differ -- "$GUESTS/hostile.elf" errors
	for m in block_outside block_unaligned block_private block_straddles_end null_port \
		null_port_b null_port_in unknown_port port_below wrong_size_b wrong_size_w port_in \
		string_io mmio share_after_protect; do
		differ -- "$GUESTS/hostile.elf" "$m"
	done
	truncate -s 1M "$tmp/d.img"
	differ --block d="$tmp/d.img" -- "$GUESTS/hostile.elf" batch
	differ --block d="$tmp/d.img",ro,sector=4096 -- "$GUESTS/hostile.elf" batch_ro
}

@test "the threat guests' attempts on private memory: refused alike either way" {
	need_kvm
	truncate -s 1M "$tmp/disk.img"
	differ --block disk="$tmp/disk.img" -- "$GUESTS/threat_private.elf" TOKEN
	differ --block disk="$tmp/disk.img" -- "$GUESTS/threat_private.elf" TOKEN abort
	differ -- "$GUESTS/threat_emulation.elf"
	differ --block disk="$tmp/disk.img" -- "$GUESTS/threat_emulation.elf"
}

@test "exits, traps and block I/O: same statuses and output either way" {
	need_kvm
	local s t
	for s in 0 1 42 239 240; do differ -- "$GUESTS/exit_status.elf" "$s"; done
	differ -- "$GUESTS/exit_status.elf" 7 return
	for t in ud de gp null null-write beyond write-text exec-data exec-stack write-rodata \
		stack-overflow; do
		differ -- "$GUESTS/trap.elf" "$t"
	done
	truncate -s 1M "$tmp/b.img"
	differ --block b="$tmp/b.img" -- "$GUESTS/block_io.elf" info b
	differ --block b="$tmp/b.img" -- "$GUESTS/block_io.elf" errors b
	differ --block b="$tmp/b.img" -- "$GUESTS/block_io.elf" fill b 7
	differ --block b="$tmp/b.img" -- "$GUESTS/block_io.elf" verify b 7
	differ --block b="$tmp/b.img" -- "$GUESTS/block_io.elf" batch b 9
	differ -- "$GUESTS/noprotect.elf"
	differ --channel c=listen:"$tmp/e.sock" -- "$GUESTS/chan_echo.elf" open c
	differ --channel c=listen:"$tmp/e.sock" -- "$GUESTS/chan_echo.elf" poll c 30
	differ --block b="$tmp/b.img" --channel c=listen:"$tmp/e.sock" -- "$GUESTS/chan_echo.elf" poll0 c
	differ -- "$GUESTS/chan_echo.elf" open nosuch
}

# The readiness page: a guest that polls with a zero timeout (answered by
# the runner from the page the device process keeps) sees a channel turn
# ready when a peer sends, though it never waits in the device process.
@test "zero-timeout POLLs see a channel turn ready while the guest never sleeps" {
	need_kvm
	local sock=$tmp/spin.sock
	timeout 60 "$CLOAK" --channel c=listen:"$sock" "$GUESTS/chan_echo.elf" spin c 20000 \
		>"$tmp/out" 2>&1 &
	local pid=$!
	wait_for_socket "$sock"
	sleep 1
	python3 - "$sock" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
time.sleep(0.5)
s.sendall(b"hello-ready")
time.sleep(2)
PY
	wait "$pid"
	local st=$?
	[ "$st" -eq 0 ] || { echo "status $st: $(cat "$tmp/out")"; return 1; }
	grep -q 'ready: read 11: hello-ready' "$tmp/out" || { cat "$tmp/out"; return 1; }
	# And zero-timeout answers agree with the device process's own.
	truncate -s 64K "$tmp/b.img"
	run_cloak --block b="$tmp/b.img" --channel c=listen:"$tmp/p0.sock" "$GUESTS/chan_echo.elf" poll0 c
	[[ $output == *"poll0 channel: 0 ready=0"* && $output == *"poll0 block: 0 ready=1"* &&
		$output == *"poll0 no such block device: -5 ready=0"* &&
		$output == *"poll0 nothing: 0 ready=0"* ]] || { echo "$output"; return 1; }
}

#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The server's token when its start cannot succeed, and the packages'
# upgrade, removal and purge (docs/packaging.md): a start with no
# /dev/kvm, with no credential or with a wrong PIN is a failed unit with
# one line in the journal that says why, never a hang or a restart loop;
# an upgrade to the next version keeps every token's key and restarts the
# running token; apt remove keeps the stores, apt purge removes the
# server's. As root, second boot, after server.bats.
bats_require_minimum_version 1.5.0
load helpers

UNIT=$SYSTEM_TOKEN$WEB.service
CRED=$CREDSTORE/cloak-pkcs11-$WEB.pin

# failed_start: starts the token, which must fail within 300 s (no hang)
# and not be restarted; writes the lines its processes wrote to the
# journal, then "--", then systemd's own about it, to $LINES, and prints
# them.
failed_start() {
	LINES=$BATS_TEST_TMPDIR/lines
	# From a stopped token (nginx stops with it: PartOf=).
	timeout 300 systemctl stop "$UNIT"
	journal_mark "$BATS_TEST_TMPDIR/cursor"
	run timeout 300 systemctl start "$UNIT"
	[ "$status" -ne 0 ] && [ "$status" -ne 124 ] || { echo "systemctl start: $status: $output"; return 1; }
	[ "$(systemctl is-active "$UNIT")" = failed ] || { systemctl status --no-pager "$UNIT"; return 1; }
	[ "$(systemctl show -p NRestarts --value "$UNIT")" = 0 ] || { echo "restarted"; return 1; }
	# Nor started again by its socket, whose queued connections (the start
	# check's own) would start it for ever: the socket stopped with it.
	# Long enough for a second start to have shown itself.
	sleep 5
	[ "$(systemctl is-active "$UNIT")" = failed ] || { systemctl status --no-pager "$UNIT"; return 1; }
	run systemctl is-active "${UNIT%.service}.socket"
	[ "$output" != active ] || { echo "the socket still listens"; return 1; }
	{
		journalctl -q -o cat --no-pager --after-cursor="$(cat "$BATS_TEST_TMPDIR/cursor")" _SYSTEMD_UNIT="$UNIT"
		echo --
		journalctl -q -o cat --no-pager --after-cursor="$(cat "$BATS_TEST_TMPDIR/cursor")" _PID=1 UNIT="$UNIT"
	} >"$LINES"
	cat "$LINES"
}

# one_line PATTERN: of the lines in $LINES that cloak's programs wrote
# (the monitor's "cloak: ", the launcher's "cloak-pkcs11: "), exactly one,
# and it matches PATTERN; the guest's own lines (pkcs11: ...) may be there,
# and so may the monitor's note that systemd stopped it after the check
# failed (SIGTERM), which is no reason of its own.
one_line() {
	local ours
	ours=$(sed '/^--$/q' "$LINES" | grep -E '^cloak(-pkcs11)?: ' |
		grep -vx 'cloak: interrupted by signal 15 (Terminated), guest stopped' || true)
	[ "$(grep -c . <<<"$ours")" -eq 1 ] && grep -qiE "$1" <<<"$ours"
}

# What a test changed, put back even when it failed, so the next one starts
# from a host with KVM and the right credential.
teardown() {
	if [ -e /run/systemd/system/dev-kvm.device.d/sysvm-test.conf ]; then
		rm -rf /run/systemd/system/dev-kvm.device.d
		systemctl daemon-reload
	fi
	[ -e /dev/kvm ] || modprobe kvm_amd || true
	[ ! -e "$CRED.saved" ] || mv -f "$CRED.saved" "$CRED"
	systemctl reset-failed "$UNIT" "${UNIT%.service}.socket" 2>/dev/null || true
}

@test "a start with no /dev/kvm fails after the wait for it: a failed unit, one line from the monitor naming /dev/kvm" {
	# nginx stops with the token (PartOf=); every other token too (luks.bats'
	# disk token, enabled, started at this boot), or kvm_amd stays in use.
	timeout 300 systemctl stop "$UNIT" 'cloak-pkcs11@*.service'
	modprobe -r kvm_amd kvm
	[ ! -e /dev/kvm ]
	# The unit waits for dev-kvm.device, for systemd's device timeout (90 s);
	# here 5 s, for the test's time only: the same path, the device job
	# timed out, then the monitor.
	mkdir -p /run/systemd/system/dev-kvm.device.d
	printf '[Unit]\nJobRunningTimeoutSec=5s\n' >/run/systemd/system/dev-kvm.device.d/sysvm-test.conf
	systemctl daemon-reload
	failed_start
	one_line '^cloak: .*/dev/kvm'
	run journalctl -q -o cat --no-pager --after-cursor="$(cat "$BATS_TEST_TMPDIR/cursor")" _PID=1 UNIT=dev-kvm.device
	[[ $output == *"Timed out waiting for device"* ]] || { echo "no wait for /dev/kvm: $output"; return 1; }
	# KVM back: the token starts again, its socket with it.
	modprobe kvm_amd
	udevadm settle
	run timeout 300 systemctl start "$UNIT"
	[ "$status" -eq 0 ] || { echo "$output"; systemctl status --no-pager "$UNIT"; return 1; }
	[ "$(systemctl is-active "${UNIT%.service}.socket")" = active ]
}

@test "a start with no credential fails at once: a failed unit, one line naming where the PIN should be" {
	mv "$CRED" "$CRED.saved"
	failed_start
	one_line "^cloak-pkcs11: .*PIN.*cloak-pkcs11-$WEB\.pin"
}

@test "a start with a wrong PIN fails: a failed unit, one line saying the token refused the PIN, no restart to spend another try" {
	cp -p "$CRED" "$CRED.saved"
	printf 'wrong-pin-0' | systemd-creds encrypt - "$CRED"
	failed_start
	one_line '^cloak-pkcs11: .*CKR_PIN_INCORRECT'
	# The right PIN starts it again (one wrong try locks nothing), and
	# nginx with it.
	mv -f "$CRED.saved" "$CRED"
	systemctl reset-failed "$UNIT"
	run timeout 300 systemctl start "$UNIT" nginx.service
	[ "$status" -eq 0 ] || { echo "$output"; systemctl status --no-pager "$UNIT"; return 1; }
	[ "$(fetch 1)" = "hello from the token's key" ]
}

@test "an upgrade to the next version keeps every token's key and restarts the running token" {
	compgen -G "$NEXT_DEBS/*.deb" >/dev/null || skip "no packages of the next version given (run-sysvm DEBS NEXT-DEBS)"
	# Running, with nginx, whatever the tests before left.
	run timeout 300 systemctl start "$UNIT" nginx.service
	[ "$status" -eq 0 ] || { echo "$output"; systemctl status --no-pager "$UNIT"; return 1; }
	wait_active "$UNIT"
	local before
	before=$(systemctl show -p MainPID --value "$UNIT")
	cd "$NEXT_DEBS"
	run env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ./*.deb
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	local d
	for d in ./*.deb; do
		[ "$(dpkg-query -W -f '${Version}' "$(dpkg-deb -f "$d" Package)")" = "$(dpkg-deb -f "$d" Version)" ]
	done
	wait_active "$UNIT"
	[ "$(systemctl show -p MainPID --value "$UNIT")" != "$before" ] || { echo "the token was not restarted"; return 1; }
	run p11_web --login --pin "$WEB_PIN" --list-objects --type privkey
	[[ $output == *"label:      $WEB"* ]] || { echo "$output"; return 1; }
	# nginx was restarted with it (PartOf=) and serves with the same key.
	wait_active nginx.service
	[ "$(fetch 1)" = "hello from the token's key" ]
	# The user's token too.
	run as_user "pkcs11-tool --module $P11_PROXY --token-label alice --login --pin alice-pin-1 --list-objects --type privkey"
	[[ $output == *"label:      ssh"* ]] || { echo "$output"; return 1; }
}

@test "apt remove keeps the stores; apt purge removes the server's, never a user's" {
	local pkgs=() d owner
	for d in "$DEBS"/*.deb; do pkgs+=("$(dpkg-deb -f "$d" Package)"); done
	owner=$(systemctl show -p User --value "$UNIT")
	systemctl stop nginx.service
	run env DEBIAN_FRONTEND=noninteractive apt-get remove -y "${pkgs[@]}"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[ -s "$SYSTEM_STORES/$WEB/token.img" ]
	# The server's token was stopped (a user's own runs on: the user's).
	run ! pgrep -u "$owner" -f 'pkcs11\.elf'
	# What remove left: the packages with files to purge (conffiles, or
	# a postrm with a purge step), cloak-pkcs11 among them; apt knows no
	# others any more, and would refuse the whole command for them.
	local left=()
	for d in "${pkgs[@]}"; do
		[ "$(dpkg-query -W -f '${db:Status-Status}' "$d" 2>/dev/null)" = config-files ] && left+=("$d")
	done
	[[ " ${left[*]} " == *" cloak-pkcs11 "* ]] || { echo "left after remove: ${left[*]}"; return 1; }
	run env DEBIAN_FRONTEND=noninteractive apt-get purge -y "${left[@]}"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[ ! -e "$SYSTEM_STORES" ] || { ls -laR "$SYSTEM_STORES"; return 1; }
	for d in "${pkgs[@]}"; do
		run dpkg-query -W -f '${db:Status-Status}' "$d"
		[ "$output" = not-installed ] || [ "$status" -ne 0 ] || { echo "$d: $output"; return 1; }
	done
	# A user's files are the user's: purge leaves them.
	[ -s "$(getent passwd "$SYSVM_USER" | cut -d: -f6)/.local/share/cloak-pkcs11/token.img" ]
}

#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# After the reboot, with no one there: the server's token (set up by
# server-setup.bats) started at boot from its credential, nginx after it,
# serving TLS with the token's key; a restart of the token while nginx
# runs. As root, second boot.
bats_require_minimum_version 1.5.0
load helpers

# mono UNIT PROPERTY: a monotonic timestamp of UNIT, in microseconds.
mono() { systemctl show -p "$2" --value "$1"; }

@test "after the reboot the server's token runs, started at boot with no one logged in" {
	wait_active "$SYSTEM_TOKEN$WEB.service"
	# Up before this suite's unit started (ordered after multi-user.target),
	# and no session was ever opened on this boot: no person started it.
	local up suite
	up=$(mono "$SYSTEM_TOKEN$WEB.service" ActiveEnterTimestampMonotonic)
	suite=$(mono cloak-sysvm.service ExecMainStartTimestampMonotonic)
	[ "$up" -gt 0 ] && [ "$up" -lt "$suite" ] || { echo "token up at $up us, the suite started at $suite us"; return 1; }
	# The only sessions of this boot are lingering users' managers (logind
	# opens one of class manager for each, systemd 256 and later): every
	# session logind announced is still open, and of that class.
	local opened managers
	opened=$(journalctl -b -q --no-pager -o cat -t systemd-logind | grep -c '^New session' || true)
	managers=$(loginctl list-sessions --no-legend | awk '{ print $1 }' | while read -r id; do
		loginctl show-session "$id" -p Class --value
	done | grep -c '^manager$' || true)
	[ "$opened" -eq "$managers" ] || {
		journalctl -b -q --no-pager -o cat -t systemd-logind
		loginctl list-sessions
		return 1
	}
	# Its start check logged in with the credential's PIN.
	run journalctl -b -q --no-pager -o cat -u "$SYSTEM_TOKEN$WEB.service"
	[[ $output == *"accepted the user PIN"* ]] || { echo "$output"; return 1; }
}

@test "nginx, started at boot after the token, serves 200 requests over TLS with the token's key, each a new handshake" {
	wait_active nginx.service
	[ "$(mono nginx.service ActiveEnterTimestampMonotonic)" -gt "$(mono "$SYSTEM_TOKEN$WEB.service" ActiveEnterTimestampMonotonic)" ]
	local out
	out=$(fetch 100 --tlsv1.3 2>&1)
	[ "$(grep -c "^hello from the token's key$" <<<"$out")" -eq 100 ] || { sort <<<"$out" | uniq -c; return 1; }
	out=$(fetch 100 --tlsv1.2 --tls-max 1.2 2>&1)
	[ "$(grep -c "^hello from the token's key$" <<<"$out")" -eq 100 ] || { sort <<<"$out" | uniq -c; return 1; }
	# The server's certificate is the one the token signed, over its key.
	run bash -c "openssl s_client -connect 127.0.0.1:$WEB_PORT </dev/null 2>/dev/null | openssl x509 -noout -pubkey"
	cmp <(echo "$output") <(openssl pkey -pubin -inform DER -in "$STATE/web-pub.der")
	run ! grep -E '\[(crit|alert|emerg)\]|exited on signal' /var/log/nginx/error.log
	# No PIN in nginx's configuration: its credential has it.
	run grep -rlF "$WEB_PIN" /etc/nginx /etc/systemd/system
	[ "$status" -eq 1 ] || { echo "$output"; return 1; }
	[ "$(stat -c '%U %a' "$WEB_PIN_FILE")" = "root 400" ]
}

@test "the server's token runs under each hardening directive of its unit, in force: user and groups, no privileges, a read-only system, a /tmp of its own, its lock limit, /dev/kvm its only device" {
	local unit=$SYSTEM_TOKEN$WEB.service pid
	pid=$(systemctl show -p MainPID --value "$unit")
	[ "$pid" -gt 0 ]
	# User=, Group=, SupplementaryGroups=kvm cloak-pkcs11.
	[ "$(stat -c %U:%G "/proc/$pid")" = _cloak-pkcs11:_cloak-pkcs11 ]
	local groups g
	groups=" $(awk '/^Groups:/ { $1 = ""; print }' "/proc/$pid/status") "
	for g in kvm "$TOKEN_GROUP"; do
		[[ $groups == *" $(getent group "$g" | cut -d: -f3) "* ]] || { echo "not in $g:$groups"; return 1; }
	done
	# NoNewPrivileges=yes, CapabilityBoundingSet= (empty), LimitMEMLOCK=128M.
	grep -qxP 'NoNewPrivs:\t1' "/proc/$pid/status"
	grep -qxP 'CapBnd:\t0+' "/proc/$pid/status"
	grep -qxP 'CapEff:\t0+' "/proc/$pid/status"
	[ "$(awk '/^Max locked memory/ { print $4 }' "/proc/$pid/limits")" = 134217728 ]
	# ProtectSystem=strict: even root, in the token's mount namespace, writes
	# nothing but the state directory; PrivateTmp=yes: its /tmp is not the
	# host's; ProtectHome=yes: no home directory is there.
	run nsenter -t "$pid" -m -- touch /usr/cloak-probe
	[ "$status" -ne 0 ] && [[ $output == *"Read-only file system"* ]] || { echo "$output"; return 1; }
	run nsenter -t "$pid" -m -- touch /etc/cloak-probe
	[ "$status" -ne 0 ] || { echo "/etc is writable"; return 1; }
	nsenter -t "$pid" -m -- sh -c "touch $SYSTEM_STORES/$WEB/.probe && rm $SYSTEM_STORES/$WEB/.probe"
	: >/tmp/cloak-host-probe
	run nsenter -t "$pid" -m -- test -e /tmp/cloak-host-probe
	rm -f /tmp/cloak-host-probe
	[ "$status" -ne 0 ] || { echo "the token sees the host's /tmp"; return 1; }
	local home
	home=$(getent passwd "$SYSVM_USER" | cut -d: -f6)
	[ -d "$home" ]
	run nsenter -t "$pid" -m -- test -e "$home"
	[ "$status" -ne 0 ] || { echo "$home is there"; return 1; }
	# DevicePolicy=closed, DeviceAllow=/dev/kvm rw: a process of the
	# token's cgroup opens /dev/kvm, and not the disk.
	local cg
	cg=/sys/fs/cgroup$(systemctl show -p ControlGroup --value "$unit")
	[ -d "$cg" ]
	run sh -c 'echo $$ >"$1/cgroup.procs" && exec head -c 0 /dev/kvm' sh "$cg"
	[ "$status" -eq 0 ] || { echo "/dev/kvm: $output"; return 1; }
	run sh -c 'echo $$ >"$1/cgroup.procs" && exec head -c 1 /dev/vda' sh "$cg"
	[ "$status" -ne 0 ] && [[ $output == *"Operation not permitted"* ]] || { echo "/dev/vda: $status $output"; return 1; }
}

@test "systemctl restart of the token while nginx runs: nginx is restarted with it (PartOf=) and serves again" {
	local token nginx
	token=$(systemctl show -p MainPID --value "$SYSTEM_TOKEN$WEB.service")
	nginx=$(systemctl show -p MainPID --value nginx.service)
	run timeout 300 systemctl restart "$SYSTEM_TOKEN$WEB.service"
	[ "$status" -eq 0 ] || { echo "$output"; systemctl status --no-pager "$SYSTEM_TOKEN$WEB.service"; return 1; }
	wait_active nginx.service
	[ "$(systemctl show -p MainPID --value "$SYSTEM_TOKEN$WEB.service")" != "$token" ]
	[ "$(systemctl show -p MainPID --value nginx.service)" != "$nginx" ]
	local out
	out=$(fetch 20 2>&1)
	[ "$(grep -c "^hello from the token's key$" <<<"$out")" -eq 20 ] ||
		{ sort <<<"$out" | uniq -c; tail -20 /var/log/nginx/error.log; return 1; }
}

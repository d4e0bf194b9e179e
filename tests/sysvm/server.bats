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

#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Debian's nginx, as servers run it: a master as root, two workers as nobody,
# HTTPS on loopback with an EC and an RSA key, libcloak-openssl preloaded,
# driven by curl. Every request is served; in the default mode the master's
# and the workers' memory (/proc/PID/mem, right after start, before later
# allocations can overwrite what the workers inherited, and after
# handshakes) and a worker's core dump hold none of the keys' numbers in any
# encoding keyscan knows, while the same scans find them without the
# preload; CLOAK_STATS lands in nginx's error log. Runs as root (nginx's master switches the workers to
# nobody; reading their memory and cores needs root).

bats_require_minimum_version 1.5.0

load helpers

setup() {
	libcloak_setup
	[ "$(id -u)" = 0 ] || skip "nginx runs here as root (master as root, workers as nobody); run the suite as root"
	command -v nginx >/dev/null || need "nginx is not installed (apt-get install nginx)"
	command -v curl >/dev/null || need "curl is not installed (apt-get install curl)"
	NG="$(mktemp -d /var/tmp/cloak-nginx-XXXXXX)"
	EC_PORT=$(free_port)
	RSA_PORT=$(free_port)
	while [ "$RSA_PORT" = "$EC_PORT" ]; do RSA_PORT=$(free_port); done
	nginx_prepare "$NG" "$EC_PORT" "$RSA_PORT"
}

# Stops the nginx this test started, and everything it started, for sure.
teardown() {
	[ -n "${NG:-}" ] || return 0
	stop_nginx
	rm -rf "$NG"
}

start_nginx() {
	nginx_start "$NG" "$EC_PORT" "$RSA_PORT" "$@"
}

stop_nginx() {
	nginx_stop "$NG"
}

master_pid() {
	cat "$NG/nginx.pid" 2>/dev/null
}

workers() {
	nginx_workers "$NG"
}

# fetch PORT CERT COUNT [CURL_ARGS...]: COUNT requests, each on a new
# connection with a full handshake; prints one body line per request.
fetch() {
	local port=$1 cert=$2 count=$3
	shift 3
	local urls=()
	for _ in $(seq "$count"); do urls+=("https://127.0.0.1:$port/index.html"); done
	timeout 120 curl -s -S --no-sessionid -H 'Connection: close' --cacert "$NG/$cert.crt" "$@" "${urls[@]}"
}

# What keyscan looks for: both keys' numbers (every encoding), and each
# base64 line of the key files (their text, as read from disk).
key_material() {
	key_numbers "$NG/ec.key" | sed 's/^/ec_/'
	key_numbers "$NG/rsa.key" | sed 's/^/rsa_/'
	for k in ec rsa; do
		grep -v '^-----' "$NG/$k.key" | while read -r line; do
			printf '%s_pemline=%s\n' "$k" "$(printf '%s' "$line" | od -An -tx1 | tr -d ' \n')"
		done
	done
}

# Scans every worker's memory; prints keyscan's findings, one line per hit.
scan_workers() {
	for w in $(workers); do "$KEYSCAN" --pid "$w" $(key_material); done
}

# The findings that are key numbers (not the key files' text).
numbers_found() {
	grep -E '^found [a-z]+_[A-Za-z0-9]+ (be|le|hex|HEX)$' | grep -v '_pemline '
}

@test "nginx master and two workers serve 400 HTTPS requests (EC and RSA) with the preload; CLOAK_STATS in the error log" {
	start_nginx CLOAK_STATS=1 LD_PRELOAD="$PRELOAD"
	# Workers hold secret memory.
	for w in $(workers); do grep -q '/secretmem' "/proc/$w/maps" || { echo "worker $w has no secret memory"; return 1; }; done
	# Four clients at once, 50 new connections each per key.
	for i in 1 2; do
		fetch "$EC_PORT" ec 50 >"$NG/out.ec$i" 2>&1 &
		fetch "$RSA_PORT" rsa 50 >"$NG/out.rsa$i" 2>&1 &
	done
	wait
	total=$(cat "$NG"/out.* | grep -c '^hello from nginx$')
	[ "$total" -eq 200 ] || { cat "$NG"/out.* | sort | uniq -c; tail "$NG/error.log"; return 1; }
	fetch "$EC_PORT" ec 100 --tlsv1.3 >"$NG/out.ec3"
	fetch "$RSA_PORT" rsa 100 --tlsv1.2 --tls-max 1.2 >"$NG/out.rsa3"
	[ "$(grep -c '^hello from nginx$' "$NG/out.ec3" "$NG/out.rsa3" | awk -F: '{ s += $2 } END { print s }')" -eq 200 ]
	# Both workers served, both TLS versions were used, nobody crashed.
	[ "$(awk '$2 == 200 { print $1 }' "$NG/access.log" | sort -u | wc -l)" -eq 2 ]
	[ "$(awk '$2 == 200' "$NG/access.log" | wc -l)" -eq 400 ]
	grep -q ' 200 TLSv1.2$' "$NG/access.log"
	grep -q ' 200 TLSv1.3$' "$NG/access.log"
	run ! grep -E 'exited on signal|libcloak' "$NG/error.log"
	workers_before=$(workers | sort | tr '\n' ' ')
	stop_nginx
	# The master and both workers printed their statistics at exit.
	[ "$(grep -c '^libcloak stats (pid [0-9]*): backend memfd_secret' "$NG/error.log")" -ge 3 ]
	for w in $workers_before; do
		grep -q "^libcloak stats (pid $w): backend memfd_secret; 0 secrets in use" "$NG/error.log" ||
			{ echo "no stats line of worker $w"; grep libcloak "$NG/error.log"; return 1; }
	done
}

# encodings_control: keyscan finds a number in each encoding it knows (be,
# le, hex, HEX) in a file that holds it in all four, so a scan that finds
# nothing is not a scan that cannot find.
encodings_control() {
	local hex f
	hex=$(key_numbers "$NG/rsa.key" | sed -n 's/^prime1=//p' | sed 's/^00//')
	f="$NG/encodings"
	python3 -c 'import sys; b = bytes.fromhex(sys.argv[1]); h = sys.argv[1]
sys.stdout.buffer.write(b + b"." + b[::-1] + b"." + h.lower().encode() + b"." + h.upper().encode())' "$hex" >"$f"
	run "$KEYSCAN" "$f" "prime1=$hex"
	echo "$output"
	[ "$status" -eq 1 ]
	for e in be le hex HEX; do
		grep -qx "found prime1 $e" <<<"$output" || { echo "keyscan missed $e"; return 1; }
	done
}

# Scans the master and every worker; prints keyscan's findings.
scan_all() {
	local p
	for p in "$(master_pid)" $(workers); do echo "pid $p"; "$KEYSCAN" --pid "$p" $(key_material); done
}

@test "workers' and master's memory, before and after handshakes: key numbers without the preload, none in the default mode" {
	encodings_control
	# Control: the workers inherit the master's key numbers at fork, before
	# any handshake.
	start_nginx
	run scan_all
	echo "$output"
	[[ $output == *"found rsa_prime1 le"* ]]
	[[ $output == *"found rsa_prime1 be"* ]]
	[[ $output == *"found ec_priv be"* ]]
	fetch "$EC_PORT" ec 4 >/dev/null
	fetch "$RSA_PORT" rsa 4 >/dev/null
	run scan_workers
	echo "$output"
	[[ $output == *"found ec_priv le"* ]]
	[[ $output == *"found rsa_prime1 le"* ]]
	[[ $output == *"found rsa_privateExponent le"* ]]
	stop_nginx
	# The preload's default mode: the BIGNUMs and their working copies
	# (RSA's Montgomery contexts of p and q) are in secret memory, and the
	# master's freed key-decoding buffers were zeroed before its workers
	# were forked, so nothing is inherited either. Scanned at once (before
	# later allocations could overwrite freed memory) and after handshakes.
	start_nginx LD_PRELOAD="$PRELOAD"
	run scan_all
	echo "$output"
	[ "$(grep -c 'regions unreadable' <<<"$output")" -eq 3 ]
	run ! numbers_found <<<"$output"
	fetch "$EC_PORT" ec 20 >/dev/null
	fetch "$RSA_PORT" rsa 20 >/dev/null
	run scan_all
	echo "$output"
	scan=$output
	[ "$(grep -c 'regions unreadable' <<<"$scan")" -eq 3 ]
	run ! grep ' 0 regions unreadable' <<<"$scan" # the secret mappings
	run ! numbers_found <<<"$scan"
	stop_nginx
	# Secure-heap-only mode: p and q's working copies are ordinary memory.
	start_nginx LD_PRELOAD="$PRELOAD" CLOAK_OPENSSL=secure
	fetch "$RSA_PORT" rsa 4 >/dev/null
	run scan_workers
	echo "$output"
	[[ $output == *"found rsa_prime1 le"* ]]
	run ! grep -E '^found (ec_priv|rsa_privateExponent) le' <<<"$output"
}

@test "the master with CLOAK_OPENSSL=all: no key number anywhere" {
	# Every OpenSSL allocation in secret memory; glibc told to fill freed
	# memory, so the key files' text in stdio's freed read buffer goes too.
	start_nginx LD_PRELOAD="$PRELOAD" CLOAK_OPENSSL=all GLIBC_TUNABLES=glibc.malloc.perturb=165
	fetch "$EC_PORT" ec 10 >/dev/null
	fetch "$RSA_PORT" rsa 10 >/dev/null
	for p in "$(master_pid)" $(workers); do
		run "$KEYSCAN" --pid "$p" $(key_material)
		echo "$p: $output"
		[ "$status" -eq 0 ]
	done
	stop_nginx
	# Without that, no number is found either (only text of the key files
	# may be, where glibc's stdio read them).
	start_nginx LD_PRELOAD="$PRELOAD" CLOAK_OPENSSL=all
	fetch "$RSA_PORT" rsa 10 >/dev/null
	for p in "$(master_pid)" $(workers); do
		run "$KEYSCAN" --pid "$p" $(key_material)
		echo "$p: $output"
		run ! numbers_found <<<"$output"
	done
}

# dump_worker [--at-once]: SIGABRT to a worker after handshakes (or at once,
# before any); prints the core's path.
dump_worker() {
	if [ "${1:-}" != --at-once ]; then
		fetch "$EC_PORT" ec 4 >/dev/null
		fetch "$RSA_PORT" rsa 4 >/dev/null
	fi
	rm -f "$NG"/cores/core*
	local w
	w=$(workers | head -1)
	kill -ABRT "$w"
	for _ in $(seq 100); do
		if ! kill -0 "$w" 2>/dev/null; then
			ls "$NG"/cores/core* 2>/dev/null | head -1
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# dump_master [ENV=VALUE...]: nginx started from DIR/cores with core
# dumps allowed, handshakes, then SIGABRT to the master (its workers are
# killed); prints the core's path.
dump_master() {
	(cd "$NG/cores" && ulimit -c unlimited && start_nginx "$@") || return 1
	fetch "$EC_PORT" ec 4 >/dev/null
	fetch "$RSA_PORT" rsa 4 >/dev/null
	rm -f "$NG"/cores/core*
	local m w
	m=$(master_pid)
	w=$(workers)
	kill -ABRT "$m"
	for _ in $(seq 100); do kill -0 "$m" 2>/dev/null || break; sleep 0.1; done
	# shellcheck disable=SC2086 # one pid a word
	kill -KILL $w 2>/dev/null || :
	rm -f "$NG/nginx.pid"
	ls "$NG"/cores/core* 2>/dev/null | head -1
}

@test "the master's core dump: key numbers without the preload, none with CLOAK_OPENSSL=all" {
	core_pattern_writes_here || need "kernel.core_pattern '$(cat /proc/sys/kernel/core_pattern)' does not write core files in the working directory (sysctl kernel.core_pattern=core)"
	core=$(dump_master)
	[ -n "$core" ] || need "no core file was written (limits or core_pattern)"
	run "$KEYSCAN" "$core" $(key_material)
	echo "control: $output"
	[ "$status" -eq 1 ]
	numbers_found <<<"$output"
	core=$(dump_master LD_PRELOAD="$PRELOAD" CLOAK_OPENSSL=all)
	[ -n "$core" ]
	run "$KEYSCAN" "$core" $(key_material)
	echo "all: $output"
	run ! numbers_found <<<"$output"
}

@test "a worker's core dump: key numbers without the preload, nothing of the keys with it (CLOAK_OPENSSL=all)" {
	core_pattern_writes_here || need "kernel.core_pattern '$(cat /proc/sys/kernel/core_pattern)' does not write core files in the working directory (sysctl kernel.core_pattern=core)"
	start_nginx
	core=$(dump_worker)
	[ -n "$core" ] || need "no core file was written (limits or core_pattern)"
	run "$KEYSCAN" "$core" $(key_material)
	echo "control: $output"
	[ "$status" -eq 1 ]
	[[ $output == *"found rsa_prime1 le"* ]]
	[[ $output == *"found ec_priv le"* ]]
	stop_nginx
	# The default mode, dumped before any handshake: nothing the master
	# decoded was inherited (its freed buffers were zeroed).
	start_nginx LD_PRELOAD="$PRELOAD"
	core=$(dump_worker --at-once)
	[ -n "$core" ]
	run "$KEYSCAN" "$core" $(key_material)
	echo "default mode: $output"
	run ! numbers_found <<<"$output"
	stop_nginx
	start_nginx LD_PRELOAD="$PRELOAD" CLOAK_OPENSSL=all GLIBC_TUNABLES=glibc.malloc.perturb=165
	core=$(dump_worker)
	[ -n "$core" ]
	[ "$(stat -c %s "$core")" -gt 100000 ]
	run "$KEYSCAN" "$core" $(key_material)
	echo "preload: $output"
	[ "$status" -eq 0 ]
	# The master noticed the crash and started a new worker, which serves.
	[ "$(fetch "$RSA_PORT" rsa 3 | grep -c hello)" -eq 3 ]
	stop_nginx
	# CLOAK_OPENSSL=all alone: no key number in the core either (only the
	# key files' text may be, in glibc's freed stdio buffer).
	start_nginx LD_PRELOAD="$PRELOAD" CLOAK_OPENSSL=all
	core=$(dump_worker)
	[ -n "$core" ]
	run "$KEYSCAN" "$core" $(key_material)
	echo "all: $output"
	run ! numbers_found <<<"$output"
}

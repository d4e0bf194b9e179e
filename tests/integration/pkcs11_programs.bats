#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Programs nobody here wrote, as users run them, with their private key in
# the PKCS#11 token guest (docs/pkcs11.md): Debian's nginx (master as root,
# two workers as nobody) serving HTTPS through libp11's OpenSSL engine,
# OpenSSH's ssh-keygen -D and ssh -I against a throwaway sshd on
# 127.0.0.1, and 50 clients signing at once. The key scans look for the
# key's scalar in every encoding keyscan.py knows in the memory of every
# nginx process, a worker's core dump and the channel traffic, each beside
# a control that finds it. A P-256 signature takes about 3.5 s where KVM
# emulates guest code: what needs many runs only where the CPU runs guest
# code (the SVM tier). As root (nginx's workers, sshd, /proc/PID/mem).
bats_require_minimum_version 1.5.0
load helpers
load "$ROOT/services/pkcs11/testing/pkcs11_helpers"

SCAN=$ROOT/tests/integration/keyscan.py
CLIENT=$ROOT/services/ssh-agent/testing/agent_client.py
ENGINE=/usr/lib/x86_64-linux-gnu/engines-3/pkcs11.so

setup() {
	need_root # nginx's workers run as nobody; sshd and /proc/PID/mem need root
	# Searchable by nginx's workers (nobody).
	TMP=$(mktemp -d /var/tmp/cloak-p11p-XXXXXX)
	chmod 755 "$TMP"
	TOKEN_PID=
	PIDS=()
	NG=
	unset SSH_AUTH_SOCK SSH_AGENT_PID DISPLAY
}

teardown() {
	[ -n "$NG" ] && nginx_stop "$NG"
	[ -n "$TOKEN_PID" ] && kill "$TOKEN_PID" 2>/dev/null
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$TMP"
	true
}

# need_many_signatures: many signatures run only where the CPU runs guest
# code (helpers.bash).
need_many_signatures() {
	need_native_cpu "where one P-256 signature takes about 3.5 s"
}

# start_token: the token guest, its channel on $TMP/token.sock, given to
# nobody (nginx's workers connect as nobody: a worker that cannot connect
# waits in libp11 for ever); initialised; CLOAK_PKCS11_SOCKET exported.
start_token() {
	start_memory_token || return 1
	chown nobody "$SOCK"
	init_token > /dev/null
}

# import_key: a P-256 key made by openssl ($TMP/key.pem, its scalar in
# $SCALAR) written into the token as private key and public key "web", id
# 01. Only an imported key has a value the scans can look for.
import_key() {
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$TMP/key.pem" 2> /dev/null
	openssl pkey -in "$TMP/key.pem" -outform DER -out "$TMP/key.der"
	openssl pkey -in "$TMP/key.pem" -pubout -outform DER -out "$TMP/pub.der"
	openssl pkey -in "$TMP/key.pem" -pubout -out "$TMP/pub.pem"
	SCALAR=$(openssl pkey -in "$TMP/key.pem" -noout -text |
		awk '/^priv:/ { on = 1; next } /^pub:/ { on = 0 } on' | tr -d ' :\n')
	SCALAR=${SCALAR: -64}
	[[ $SCALAR =~ ^[0-9a-f]{64}$ ]] || { echo "no scalar: $SCALAR"; return 1; }
	p11 --login --pin "$PIN" --write-object "$TMP/key.der" --type privkey --id 01 --label web > /dev/null 2>&1 || return 1
	p11 --login --pin "$PIN" --write-object "$TMP/pub.der" --type pubkey --id 01 --label web > /dev/null 2>&1
}

# engine_conf: an OpenSSL configuration that loads and initialises libp11's
# engine on the module (nginx calls ENGINE_load_private_key on an engine it
# does not initialise itself); $TMP/openssl.cnf.
engine_conf() {
	[ -f "$ENGINE" ] || { echo "no pkcs11 engine: apt-get install libengine-pkcs11-openssl"; return 1; }
	cat > "$TMP/openssl.cnf" <<-EOF
	openssl_conf = openssl_init
	[openssl_init]
	engines = engine_section
	[engine_section]
	pkcs11 = pkcs11_section
	[pkcs11_section]
	engine_id = pkcs11
	MODULE_PATH = $MODULE
	init = 1
	EOF
	chmod 644 "$TMP/openssl.cnf"
}

# self_signed: a certificate for 127.0.0.1 signed by the token's key "web"
# through the engine ($TMP/web.crt).
KEY_URI="pkcs11:token=cloak-test;object=web;type=private;pin-value=$PIN"
self_signed() {
	OPENSSL_CONF=$TMP/openssl.cnf timeout 120 openssl req -x509 -engine pkcs11 -keyform engine \
		-key "$KEY_URI" -new -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1 -days 2 \
		-out "$TMP/web.crt" 2> "$TMP/req.err" || { cat "$TMP/req.err"; return 1; }
	chmod 644 "$TMP/web.crt"
}

load ../harness/nginx # nginx_site, nginx_workers, nginx_stop

# nginx_start: Debian's nginx from $TMP/ng, a master and two workers (as
# nobody) on 127.0.0.1:$PORT, ssl_certificate_key naming the token's key
# through the engine; cores dumped in $TMP/ng/cores.
nginx_start() {
	command -v nginx > /dev/null || { echo "no nginx: apt-get install nginx"; return 1; }
	NG=$TMP/ng
	PORT=$(free_port)
	nginx_site "$NG" "env CLOAK_PKCS11_SOCKET;" "env OPENSSL_CONF;" <<-EOF
		server { listen 127.0.0.1:$PORT ssl; root $NG;
			ssl_certificate $TMP/web.crt;
			ssl_certificate_key "engine:pkcs11:$KEY_URI"; }
	EOF
	OPENSSL_CONF=$TMP/openssl.cnf timeout 120 nginx -c "$NG/nginx.conf" -p "$NG" -e "$NG/error.log" \
		2> "$NG/start.err" || { cat "$NG/start.err" "$NG/error.log"; return 1; }
	wait_port "$PORT" || return 1
	for _ in $(seq 50); do
		[ "$(workers | wc -l)" -eq 2 ] && return 0
		sleep 0.1
	done
	echo "nginx did not start two workers"
	return 1
}

workers() {
	nginx_workers "$NG"
}

wait_port() {
	for _ in $(seq 100); do
		python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1).close()' "$1" 2> /dev/null && return 0
		sleep 0.1
	done
	echo "nothing listens on port $1"
	return 1
}

# fetch COUNT CURL-ARGS...: COUNT requests, each on a new connection with a
# full handshake, the certificate verified; one body line each.
fetch() {
	local count=$1 urls=()
	shift
	for _ in $(seq "$count"); do urls+=("https://127.0.0.1:$PORT/index.html"); done
	timeout 300 curl -s -S --max-time 60 --no-sessionid -H 'Connection: close' \
		--cacert "$TMP/web.crt" "$@" "${urls[@]}"
}

# record_traffic: clients reach the token through a relay that writes each
# connection's bytes to $TMP/traffic.N (N from 0, in order).
record_traffic() {
	"$CLIENT" proxy "$TMP/rec.sock" "$SOCK" "$TMP/traffic" &
	PIDS+=($!)
	wait_for_socket "$TMP/rec.sock" || return 1
	chown nobody "$TMP/rec.sock"
	export CLOAK_PKCS11_SOCKET=$TMP/rec.sock
}

@test "nginx serves HTTPS with its key in the token (engine:pkcs11): TLS 1.2 and 1.3 on new connections, curl verifies the certificate the token signed" {
	need_many_signatures
	start_token
	import_key
	engine_conf
	self_signed
	# The certificate carries the token's key.
	openssl x509 -in "$TMP/web.crt" -noout -pubkey | cmp - "$TMP/pub.pem"
	nginx_start
	local n=${P11_NGINX_REQUESTS:-50}
	fetch "$n" --tlsv1.3 > "$TMP/out13" 2>&1 &
	local a=$!
	fetch "$n" --tlsv1.2 --tls-max 1.2 > "$TMP/out12" 2>&1
	wait "$a" || true
	[ "$(grep -c '^hello from nginx$' "$TMP/out13")" -eq "$n" ] || { sort "$TMP/out13" | uniq -c; tail "$NG/error.log"; return 1; }
	[ "$(grep -c '^hello from nginx$' "$TMP/out12")" -eq "$n" ] || { sort "$TMP/out12" | uniq -c; tail "$NG/error.log"; return 1; }
	[ "$(grep -c ' 200 TLSv1.3$' "$NG/access.log")" -eq "$n" ]
	[ "$(grep -c ' 200 TLSv1.2$' "$NG/access.log")" -eq "$n" ]
	run ! grep -E 'exited on signal|\[(crit|alert|emerg)\]' "$NG/error.log"
	# The control: a client that trusts another certificate is refused.
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$TMP/other.key" \
		-out "$TMP/other.crt" -days 2 -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1 2> /dev/null
	run timeout 60 curl -s -S --max-time 30 --cacert "$TMP/other.crt" "https://127.0.0.1:$PORT/index.html"
	[ "$status" -eq 60 ] || { echo "$output"; return 1; }
}

@test "nginx logs in with the PIN from pin-source=file: readable by root alone (as a systemd credential is), no PIN in nginx.conf; its workers serve" {
	need_native_cpu
	start_token
	import_key
	engine_conf
	# The master (root) reads it; the workers (nobody) cannot, and need
	# not: libp11 logs them in again with the PIN it read. No final
	# newline: libp11 would send it as part of the PIN.
	printf '%s' "$PIN" > "$TMP/pin"
	chmod 400 "$TMP/pin"
	run ! runuser -u nobody -- cat "$TMP/pin"
	KEY_URI="pkcs11:token=cloak-test;object=web;type=private?pin-source=file:$TMP/pin"
	self_signed
	nginx_start
	run ! grep -F "$PIN" "$NG/nginx.conf"
	fetch 20 > "$TMP/out" 2>&1
	[ "$(grep -c '^hello from nginx$' "$TMP/out")" -eq 20 ] || { sort "$TMP/out" | uniq -c; tail "$NG/error.log"; return 1; }
	# The control: the same URI on a file with a wrong PIN signs nothing.
	printf '%s' 000000 > "$TMP/pin.wrong"
	KEY_URI="pkcs11:token=cloak-test;object=web;type=private?pin-source=file:$TMP/pin.wrong"
	run self_signed
	[ "$status" -ne 0 ] || { echo "$output"; return 1; }
}

@test "no byte of the token's key in any nginx process, a worker's core dump or the channel traffic, in any encoding; controls find it" {
	core_pattern=$(cat /proc/sys/kernel/core_pattern)
	[[ $core_pattern != "|"* && $core_pattern != */* ]] ||
		{ echo "kernel.core_pattern '$core_pattern' does not write core files in the working directory (sysctl kernel.core_pattern=core)"; return 1; }
	run "$SCAN" selftest
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	start_token
	record_traffic
	import_key
	# Control: the import crossed the channel with the scalar in it.
	local imported
	imported=$(find "$TMP" -maxdepth 1 -name 'traffic.*' | wc -l)
	run "$SCAN" key "$SCALAR" "$TMP"/traffic.*
	[ "$status" -eq 1 ] || { echo "control not found in the traffic: $output"; return 1; }
	engine_conf
	self_signed
	nginx_start
	# One handshake of each version, on each worker at most.
	[ "$(fetch 1 --tlsv1.3)" = "hello from nginx" ]
	[ "$(fetch 1 --tlsv1.2 --tls-max 1.2)" = "hello from nginx" ]
	# Control: a process that holds the scalar is found.
	python3 -c 'import sys, time; k = bytes.fromhex(sys.argv[1]); sys.stdout.write("x\n"); sys.stdout.flush(); time.sleep(60)' \
		"$SCALAR" > "$TMP/holder.out" &
	local holder=$!
	PIDS+=("$holder")
	for _ in $(seq 50); do [ -s "$TMP/holder.out" ] && break; sleep 0.1; done
	run "$SCAN" key-proc "$SCALAR" "$holder"
	[ "$status" -eq 1 ] || { echo "control not found in process $holder: $output"; return 1; }
	local p pids
	pids="$(cat "$NG/nginx.pid") $(workers | tr '\n' ' ')"
	[ "$(wc -w <<< "$pids")" -eq 3 ]
	for p in $pids; do
		run "$SCAN" key-proc "$SCALAR" "$p"
		[ "$status" -eq 0 ] || { echo "nginx $p: $output"; return 1; }
	done
	# A worker's core dump.
	local w core
	w=$(workers | head -1)
	kill -ABRT "$w"
	for _ in $(seq 100); do kill -0 "$w" 2> /dev/null || break; sleep 0.1; done
	core=$(find "$NG/cores" -type f -name 'core*' | head -1)
	[ -n "$core" ] || { echo "no core file from worker $w"; ls -l "$NG/cores"; return 1; }
	run "$SCAN" key "$SCALAR" "$core"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	# The traffic after the import: the certificate's signature, nginx's
	# logins and handshakes.
	local later=()
	for p in "$TMP"/traffic.*; do
		[ "${p##*.}" -ge "$imported" ] && later+=("$p")
	done
	[ "${#later[@]}" -ge 4 ] || { echo "only ${#later[@]} connections after the import"; return 1; }
	run "$SCAN" key "$SCALAR" "${later[@]}" "$TMP/monitor.out"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
}

# ssh_p11 [SSH-OPTIONS...]: ssh -I the module to the test sshd, the PIN
# given by an askpass program, no agent; runs `true`. (IdentitiesOnly would
# drop the module's keys: no IdentityFile names them.)
ssh_p11() {
	printf '#!/bin/sh\necho %s\n' "$PIN" > "$TMP/askpass"
	chmod 700 "$TMP/askpass"
	SSH_ASKPASS=$TMP/askpass SSH_ASKPASS_REQUIRE=force timeout 120 ssh -F /dev/null -I "$MODULE" \
		-o IdentityAgent=none \
		-o UserKnownHostsFile="$TMP/known_hosts" -o StrictHostKeyChecking=yes \
		-o ConnectTimeout=60 "$@" -p "$PORT" root@127.0.0.1 true < /dev/null
}

@test "OpenSSH: ssh-keygen -D prints the token's key made in the guest; ssh -I logs in to an sshd on 127.0.0.1 with it, and not with another key authorised" {
	start_token
	p11 --login --pin "$PIN" --keypairgen --key-type EC:prime256v1 --id 02 --label ssh > /dev/null 2>&1
	run timeout 120 ssh-keygen -D "$MODULE"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[ "${#lines[@]}" -eq 1 ] || { echo "$output"; return 1; }
	[[ ${lines[0]} == "ecdsa-sha2-nistp256 "* ]] || { echo "$output"; return 1; }
	local key=${lines[0]}
	# The same key as the token's public key object, read by pkcs11-tool.
	pubkey_pem 02 2> /dev/null
	[ "$(ssh-keygen -i -m PKCS8 -f "$TMP/pub02.pem" | cut -d' ' -f1,2)" = "$(cut -d' ' -f1,2 <<< "$key")" ]
	start_sshd
	# The control: another key authorised, the token's key is refused.
	ssh-keygen -q -t ecdsa -b 256 -N '' -f "$TMP/other"
	cp "$TMP/other.pub" "$TMP/authorized_keys"
	run ssh_p11
	[ "$status" -eq 255 ] || { echo "$output"; cat "$TMP/sshd.log"; return 1; }
	[[ $output == *"Permission denied"* ]] || { echo "$output"; return 1; }
	echo "$key" > "$TMP/authorized_keys"
	run ssh_p11
	[ "$status" -eq 0 ] || { echo "$output"; cat "$TMP/sshd.log"; return 1; }
	local fp
	fp=$(ssh-keygen -l -f "$TMP/authorized_keys" | cut -d' ' -f2)
	grep -q "Accepted publickey for root from 127.0.0.1 port [0-9]* ssh2: ECDSA $fp" "$TMP/sshd.log" ||
		{ cat "$TMP/sshd.log"; return 1; }
}

@test "50 processes at once sign through the module, each its own message; openssl verifies every signature" {
	need_many_signatures
	start_token
	import_key
	local i
	for i in $(seq 50); do
		echo "message $i of 50, $RANDOM" > "$TMP/msg$i"
	done
	sign_one() {
		p11 --login --pin "$PIN" --sign --id 01 -m ECDSA-SHA256 --signature-format openssl \
			-i "$TMP/msg$1" -o "$TMP/sig$1"
	}
	at_once 50 sign_one
	for i in $(seq 50); do
		run openssl dgst -sha256 -verify "$TMP/pub.pem" -signature "$TMP/sig$i" "$TMP/msg$i"
		[[ $output == "Verified OK" ]] || { echo "signature $i: $output"; return 1; }
	done
	# The control: a signature does not verify another message.
	run openssl dgst -sha256 -verify "$TMP/pub.pem" -signature "$TMP/sig1" "$TMP/msg2"
	[ "$status" -ne 0 ]
}

# need_rsa: the token offers RSA key generation and PSS (TLS 1.3 signs
# RSA with PSS only); a token without them fails here.
need_rsa() {
	local mechs
	mechs=$(p11 -M 2> /dev/null)
	grep -q 'RSA-PKCS-KEY-PAIR-GEN' <<< "$mechs" || { echo "no CKM_RSA_PKCS_KEY_PAIR_GEN: $mechs"; return 1; }
	grep -q 'RSA-PKCS-PSS,' <<< "$mechs" || { echo "no CKM_RSA_PKCS_PSS: $mechs"; return 1; }
}

# rsa_key: an RSA-2048 key pair made in the guest, labelled "web", id 03;
# its public key in $TMP/pub.pem.
rsa_key() {
	p11 --login --pin "$PIN" --keypairgen --key-type rsa:2048 --id 03 --label web > /dev/null 2>&1 || return 1
	p11 --read-object --type pubkey --id 03 -o "$TMP/pub03.der" 2> /dev/null || return 1
	openssl pkey -pubin -inform DER -in "$TMP/pub03.der" -out "$TMP/pub.pem"
}

@test "RSA-2048 made in the guest: ssh-keygen -D prints it, ssh -I logs in with it" {
	need_many_signatures
	start_token
	need_rsa
	rsa_key
	local fp
	run timeout 120 ssh-keygen -D "$MODULE"
	grep '^ssh-rsa ' <<< "$output" > "$TMP/authorized_keys" || { echo "$output"; return 1; }
	[ "$(ssh-keygen -i -m PKCS8 -f "$TMP/pub.pem" | cut -d' ' -f1,2)" = "$(cut -d' ' -f1,2 "$TMP/authorized_keys")" ]
	start_sshd
	run ssh_p11
	[ "$status" -eq 0 ] || { echo "$output"; cat "$TMP/sshd.log"; return 1; }
	fp=$(ssh-keygen -l -f "$TMP/authorized_keys" | cut -d' ' -f2)
	grep -q "Accepted publickey for root from 127.0.0.1 port [0-9]* ssh2: RSA $fp" "$TMP/sshd.log"
}

@test "RSA-2048 made in the guest: nginx serves TLS 1.2 and 1.3 with it (RSA-PSS signatures)" {
	need_many_signatures
	start_token
	need_rsa
	# TLS 1.3 signs with RSA-PSS only; OpenSSL 3 picks it for TLS 1.2 too.
	rsa_key
	engine_conf
	self_signed
	openssl x509 -in "$TMP/web.crt" -noout -pubkey | cmp - "$TMP/pub.pem"
	nginx_start
	[ "$(fetch 10 --tlsv1.3 | grep -c '^hello from nginx$')" -eq 10 ]
	[ "$(fetch 10 --tlsv1.2 --tls-max 1.2 | grep -c '^hello from nginx$')" -eq 10 ]
	[ "$(grep -c ' 200 TLSv1.3$' "$NG/access.log")" -eq 10 ]
	[ "$(grep -c ' 200 TLSv1.2$' "$NG/access.log")" -eq 10 ]
}

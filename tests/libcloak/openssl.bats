#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# libcloak-openssl with programs written for OpenSSL: the `openssl` command
# line (keys, signatures, s_server and s_client over TLS 1.2 and 1.3, a
# 64 KiB lock limit), Python's hashlib and ssl (which load libcrypto with
# RTLD_LOCAL) including a fork, the CRYPTO_secure_* semantics, what the
# preload cannot reach (dlmopen, static OpenSSL), and a core dump of an
# openssl process searched for its key in every encoding, mode by mode.

bats_require_minimum_version 1.5.0

load helpers

setup() {
	libcloak_setup
	TMP="$(mktemp -d /var/tmp/cloak-openssl-XXXXXX)"
	cd "$TMP"
	echo "a message to sign" >msg
}

teardown() {
	for p in ${SERVER_PID:-}; do kill "$p" 2>/dev/null || :; done
	cd /
	rm -rf "$TMP"
}

# Runs a command with the preload and CLOAK_STATS=1; the stats lines go to
# $TMP/stats.
cloaked() {
	CLOAK_STATS=1 LD_PRELOAD="$PRELOAD" "$@" 2>>"$TMP/stats"
}

# The number of allocations in the last stats line printed.
stats_allocs() {
	grep '^libcloak stats' "$TMP/stats" | tail -1 | sed -E 's/.*; ([0-9]+) allocs.*/\1/'
}

sign_and_verify() {
	cloaked openssl dgst -sha256 -sign key.pem -out msg.sig msg
	[ "$(stats_allocs)" -gt 0 ]
	cloaked openssl pkey -in key.pem -pubout -out pub.pem
	run cloaked openssl dgst -sha256 -verify pub.pem -signature msg.sig msg
	[ "$status" -eq 0 ]
	[ "$output" = "Verified OK" ]
	echo tampered >>msg
	run cloaked openssl dgst -sha256 -verify pub.pem -signature msg.sig msg
	[ "$status" -ne 0 ]
}

@test "EC P-256: keygen, sign, verify with the preload; secret memory is used" {
	cloaked openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out key.pem
	grep -q 'backend memfd_secret' stats
	[ "$(stats_allocs)" -gt 0 ]
	sign_and_verify
}

@test "RSA 2048: keygen, sign, verify with the preload; secret memory is used" {
	cloaked openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out key.pem
	grep -q 'backend memfd_secret' stats
	[ "$(stats_allocs)" -gt 0 ]
	sign_and_verify
}

@test "modes: secure heap only < BIGNUM code too (the default) < every OPENSSL_malloc; values in any case; a bad one gets one line and all" {
	CLOAK_OPENSSL=secure cloaked openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out key.pem
	secure=$(stats_allocs)
	cloaked openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out key.pem
	bignum=$(stats_allocs)
	CLOAK_OPENSSL=all cloaked openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out key.pem
	all=$(stats_allocs)
	CLOAK_OPENSSL_ALL=1 cloaked openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out key.pem
	all_too=$(stats_allocs)
	echo "secure $secure, bignum $bignum, all $all ($all_too)"
	[ "$secure" -gt 0 ]
	[ "$bignum" -gt $((secure * 2)) ]
	[ "$all" -gt $((bignum * 2)) ]
	[ "$all_too" -gt $((bignum * 2)) ]
	# Any case is accepted, silently; a bad value gets one line and the
	# mode that protects most (all), never a weaker one.
	CLOAK_OPENSSL=ALL cloaked openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out key.pem
	[ "$(stats_allocs)" -gt $((bignum * 2)) ]
	run ! grep '^libcloak: ' "$TMP/stats"
	for bad in CLOAK_OPENSSL=bogus CLOAK_OPENSSL_ALL=yes; do
		run env "$bad" CLOAK_STATS=1 LD_PRELOAD="$PRELOAD" openssl genpkey -algorithm EC \
			-pkeyopt ec_paramgen_curve:P-256 -out key.pem
		echo "$output"
		[ "$status" -eq 0 ]
		[ "$(grep -c '^libcloak: ' <<<"$output")" -eq 1 ]
		allocs=$(grep '^libcloak stats' <<<"$output" | sed -E 's/.*; ([0-9]+) allocs.*/\1/')
		[ "$allocs" -gt $((bignum * 2)) ]
	done
	[[ $output == *"libcloak: CLOAK_OPENSSL_ALL=yes is not 0 or 1; using 1: every OpenSSL allocation in secret memory"* ]]
	run env CLOAK_OPENSSL=bogus LD_PRELOAD="$PRELOAD" openssl rand -hex 4
	[ "$status" -eq 0 ]
	[[ $output == *"libcloak: CLOAK_OPENSSL=bogus is not secure, bignum or all; using all: every OpenSSL allocation in secret memory"* ]]
	CLOAK_OPENSSL=all sign_and_verify
}

@test "the CRYPTO_secure_* calls behave as documented" {
	run "$BUILD/tests/libcloak/secure_heap_user" plain
	[ "$output" = readable ] # control: OpenSSL's own, never initialised: malloc
	for mode in secure bignum all; do
		run env CLOAK_OPENSSL=$mode LD_PRELOAD="$PRELOAD" "$BUILD/tests/libcloak/secure_heap_user"
		echo "$mode: $output"
		[ "$status" -eq 0 ]
		run ! grep FAIL <<<"$output"
	done
}

@test "a 64 KiB lock limit serves openssl rand and an EC key with the preload" {
	limit=(bash -c 'ulimit -l 64 && exec "$@"' limit)
	if [ "$(id -u)" = 0 ]; then
		limit=(setpriv --bounding-set=-ipc_lock,-sys_resource --inh-caps=-ipc_lock,-sys_resource "${limit[@]}")
	fi
	run "${limit[@]}" env LD_PRELOAD="$PRELOAD" CLOAK_STATS=1 openssl rand -hex 16
	echo "$output"
	[ "$status" -eq 0 ]
	[[ ${lines[0]} =~ ^[0-9a-f]{32}$ ]]
	run "${limit[@]}" env LD_PRELOAD="$PRELOAD" openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256
	[ "$status" -eq 0 ]
	[[ $output == *"BEGIN PRIVATE KEY"* ]]
}

# s_server PROTO_FLAG...: an openssl s_server with the preload on a free port
# (the key from key.pem), its pid in SERVER_PID.
start_s_server() {
	PORT=$(free_port)
	openssl req -x509 -key key.pem -out cert.pem -days 1 -subj /CN=localhost 2>/dev/null
	CLOAK_STATS=1 LD_PRELOAD="$PRELOAD" timeout 60 openssl s_server -accept "127.0.0.1:$PORT" \
		-cert cert.pem -key key.pem -www "$@" >server.out 2>server.err &
	SERVER_PID=$!
	wait_port "$PORT"
}

# s_client VERSION: a request over TLS VERSION (1_2 or 1_3); prints the reply.
s_client() {
	printf 'GET / HTTP/1.0\r\n\r\n' | CLOAK_STATS=1 LD_PRELOAD="$PRELOAD" timeout 20 \
		openssl s_client -connect "127.0.0.1:$PORT" -tls"$1" -quiet 2>>client.err
}

@test "openssl s_server and s_client, both preloaded: TLS 1.2 and TLS 1.3 with EC and RSA keys" {
	for alg in EC RSA; do
		if [ $alg = EC ]; then opt=ec_paramgen_curve:P-256; else opt=rsa_keygen_bits:2048; fi
		openssl genpkey -algorithm $alg -pkeyopt $opt -out key.pem
		start_s_server
		for v in 1_2 1_3; do
			run s_client $v
			echo "$alg TLS $v: $output"
			[[ $output == *"HTTP/1.0 200 ok"* ]]
			[[ $output == *"Protocol  : TLSv${v/_/.}"* ]]
		done
		kill "$SERVER_PID"
		wait "$SERVER_PID" 2>/dev/null || :
		SERVER_PID=
		grep -q '^libcloak stats (pid [0-9]*): backend memfd_secret' client.err
	done
}

@test "Python's hashlib and ssl (libcrypto loaded with RTLD_LOCAL) work under the preload, also after fork" {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout key.pem \
		-out cert.pem -days 1 -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1 2>/dev/null
	cat >tls.py <<-'PY'
	import hashlib, os, socket, ssl, sys, threading
	assert hashlib.sha256(b"abc").hexdigest().startswith("ba7816bf")
	assert len(hashlib.pbkdf2_hmac("sha256", b"pw", b"salt", 1000)) == 32
	server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
	server.load_cert_chain("cert.pem", "key.pem")
	client = ssl.create_default_context(cafile="cert.pem")
	listener = socket.create_server(("127.0.0.1", 0))
	port = listener.getsockname()[1]
	def serve():
	    for _ in range(2):
	        conn, _ = listener.accept()
	        with server.wrap_socket(conn, server_side=True) as s:
	            s.sendall(s.recv(100).upper())
	threading.Thread(target=serve, daemon=True).start()
	def ask():
	    with client.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="127.0.0.1") as s:
	        s.sendall(b"ping")
	        return s.recv(100), s.version()
	print(*ask())
	# A child after OpenSSL was used: it has its own copy of the DRBG state.
	pid = os.fork()
	if pid == 0:
	    os._exit(0 if len(ssl.RAND_bytes(32)) == 32 and ask()[0] == b"PING" else 1)
	_, status = os.waitpid(pid, 0)
	print("child", os.waitstatus_to_exitcode(status))
	PY
	run cloaked timeout 60 /usr/bin/python3 tls.py
	echo "$output"
	cat stats
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "b'PING' TLSv1.3" ]
	[ "${lines[1]}" = "child 0" ]
	# The preload served the secure heap (the key's BIGNUMs).
	[ "$(stats_allocs)" -gt 0 ]
}

@test "what the preload cannot reach: libcrypto in a dlmopen namespace, OpenSSL linked statically" {
	run env LD_PRELOAD="$PRELOAD" "$BUILD/tests/libcloak/dlmopen_user"
	[ "$status" -eq 0 ]
	[ "$output" = readable ]
	run env LD_PRELOAD="$PRELOAD" CLOAK_STATS=1 "$BUILD/tests/libcloak/static_openssl_user"
	[ "$status" -eq 0 ]
	grep -qx "key readable" <<<"$output"
	grep -q '^libcloak stats .*; 0 allocs, 0 frees;' <<<"$output"
}

# Dumps the core of `openssl dgst -sign` after it loaded key.pem (it then
# waits on its empty stdin); prints the core file's name.
core_of_signing_openssl() {
	rm -f core* input
	mkfifo input
	(
		ulimit -c unlimited
		exec 4<>input # a writer that never writes: openssl waits for input
		env "$@" openssl dgst -sha256 -sign key.pem -out /dev/null <input 3>&- &
		pid=$!
		for _ in $(seq 100); do
			grep -q pipe_read "/proc/$pid/wchan" 2>/dev/null && break
			sleep 0.1
		done
		kill -ABRT "$pid"
		wait "$pid" 2>/dev/null
		true
	)
	ls core* 2>/dev/null | head -1
}

@test "the private key in a core dump: present without the preload, the BIGNUM gone with it, every copy gone with CLOAK_OPENSSL=all" {
	core_pattern_writes_here || need "kernel.core_pattern '$(cat /proc/sys/kernel/core_pattern)' does not write core files in the working directory (sysctl kernel.core_pattern=core)"
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out key.pem
	numbers=$(key_numbers key.pem)
	core=$(core_of_signing_openssl)
	[ -n "$core" ] || need "no core file was written (limits or core_pattern)"
	# Without the preload: the key's BIGNUM (little-endian limbs) and its
	# big-endian DER copy are in the heap.
	run "$KEYSCAN" "$core" $numbers
	echo "none: $output"
	[[ $output == *"found priv le"* ]]
	[[ $output == *"found priv be"* ]]
	for mode in secure bignum; do
		core=$(core_of_signing_openssl LD_PRELOAD="$PRELOAD" CLOAK_OPENSSL=$mode)
		[ -n "$core" ]
		run "$KEYSCAN" "$core" $numbers
		echo "$mode: $output"
		run ! grep -q 'found priv le' <<<"$output"
	done
	core=$(core_of_signing_openssl LD_PRELOAD="$PRELOAD" CLOAK_OPENSSL=all)
	[ -n "$core" ]
	run "$KEYSCAN" "$core" $numbers
	echo "all: $output"
	[ "$status" -eq 0 ]
}

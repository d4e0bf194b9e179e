# SPDX-License-Identifier: ISC
# Shared by libcloak's bats suites that drive real programs (openssl,
# Python, nginx) and by bench/libcloak-tls-bench: where the build is, skips
# that must fail in CI, free loopback ports, nginx set up, started and
# stopped, and a private key's numbers for keyscan.

# nginx_site, nginx_workers and nginx_stop.
# shellcheck source=../harness/nginx.bash
. "$(dirname "${BASH_SOURCE[0]}")/../harness/nginx.bash"

libcloak_setup() {
	REPO="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
	BUILD="${CLOAK_BUILD_DIR:-$REPO/build}"
	PRELOAD="$BUILD/libcloak/libcloak-openssl.so"
	KEYSCAN="$BUILD/tests/libcloak/keyscan"
}

# need WHY: SKIP the test with WHY (which should name the fix), or fail
# when CLOAK_REQUIRE_KVM=1 says the host must offer everything.
need() {
	if [ "${CLOAK_REQUIRE_KVM:-0}" = 1 ]; then
		echo "CLOAK_REQUIRE_KVM=1 but $1" >&2
		return 1
	fi
	skip "$1"
}

# A TCP port on 127.0.0.1 that nothing listens on now (the kernel picks it).
free_port() {
	/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_port PORT: until something accepts on 127.0.0.1:PORT (10 s at most).
wait_port() {
	for _ in $(seq 100); do
		/usr/bin/python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1).close()' "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "nothing listens on port $1" >&2
	return 1
}

# key_numbers KEY.pem: the private numbers of an EC or RSA key as keyscan
# arguments NAME=HEX (EC: the private scalar; RSA: d, p, q, dP, dQ, qInv).
key_numbers() {
	openssl pkey -in "$1" -text -noout | awk '
		/^[A-Za-z0-9]+:$/ { name = substr($0, 1, length($0) - 1); next }
		/^    / && name != "" { gsub(/[ :]/, ""); hex[name] = hex[name] $0; next }
		{ name = "" }
		END {
			split("priv privateExponent prime1 prime2 exponent1 exponent2 coefficient", want, " ")
			for (i in want) if (want[i] in hex) print want[i] "=" hex[want[i]]
		}'
}

# core_pattern_writes_here: true if the kernel writes core files named core*
# in the dumping process's working directory.
core_pattern_writes_here() {
	local pattern
	pattern=$(cat /proc/sys/kernel/core_pattern)
	[[ $pattern != "|"* && $pattern != */* ]]
}

# nginx_prepare DIR EC_PORT RSA_PORT: in DIR, an EC and an RSA certificate
# for 127.0.0.1, a page, and an nginx.conf for a master and two workers (as
# nobody) serving HTTPS on those ports, cores dumped into DIR/cores.
nginx_prepare() {
	local dir=$1 ec_port=$2 rsa_port=$3 k alg
	for k in ec rsa; do
		if [ $k = ec ]; then alg=(-newkey ec -pkeyopt ec_paramgen_curve:P-256); else alg=(-newkey rsa:2048); fi
		openssl req -x509 "${alg[@]}" -nodes -keyout "$dir/$k.key" -out "$dir/$k.crt" -days 2 \
			-subj /CN=localhost -addext subjectAltName=IP:127.0.0.1 2>/dev/null || return 1
		chmod 644 "$dir/$k.key"
	done
	nginx_site "$dir" <<-EOF
		server { listen 127.0.0.1:$ec_port ssl; root $dir;
			ssl_certificate $dir/ec.crt; ssl_certificate_key $dir/ec.key; }
		server { listen 127.0.0.1:$rsa_port ssl; root $dir;
			ssl_certificate $dir/rsa.crt; ssl_certificate_key $dir/rsa.key; }
	EOF
}

# nginx_start DIR EC_PORT RSA_PORT [ENV=VALUE...]: nginx with that
# environment; waits until both ports accept and both workers run.
nginx_start() {
	local dir=$1 ec_port=$2 rsa_port=$3
	shift 3
	env "$@" nginx -c "$dir/nginx.conf" -p "$dir" -e "$dir/error.log" 2>"$dir/start.err" ||
		{ cat "$dir/start.err" "$dir/error.log"; return 1; }
	wait_port "$ec_port" || return 1
	wait_port "$rsa_port" || return 1
	for _ in $(seq 50); do
		[ "$(nginx_workers "$dir" | wc -l)" -eq 2 ] && return 0
		sleep 0.1
	done
	echo "nginx did not start two workers" >&2
	return 1
}

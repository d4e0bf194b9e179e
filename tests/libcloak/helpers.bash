# SPDX-License-Identifier: ISC
# Shared by libcloak's bats suites that drive real programs (openssl,
# Python, nginx): where the build is, skips that must fail in CI, free
# loopback ports, and a private key's numbers for keyscan.

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

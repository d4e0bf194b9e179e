#!/usr/bin/env bats
# libcloak-openssl with the real `openssl` command line: EC and RSA keys are
# generated, used to sign and verified with the preload active and
# CLOAK_STATS=1 showing secret-memory use; then a core dump of an openssl
# process holding a private key is searched for the key's bytes.

setup() {
	REPO="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
	BUILD="${CLOAK_BUILD_DIR:-$REPO/build}"
	PRELOAD="$BUILD/libcloak/libcloak-openssl.so"
	MEMSEARCH="$BUILD/tests/libcloak/memsearch"
	TMP="$(mktemp -d /var/tmp/cloak-openssl-XXXXXX)"
	cd "$TMP"
	echo "a message to sign" >msg
}

teardown() {
	cd /
	rm -rf "$TMP"
}

# Runs openssl with the preload and CLOAK_STATS=1; the stats line goes to stats.N
cloaked() {
	CLOAK_STATS=1 LD_PRELOAD="$PRELOAD" openssl "$@" 2>>"$TMP/stats"
}

# The number of allocations in the last stats line printed.
stats_allocs() {
	grep '^libcloak stats' "$TMP/stats" | tail -1 | sed -E 's/.*; ([0-9]+) allocs.*/\1/'
}

sign_and_verify() {
	cloaked dgst -sha256 -sign key.pem -out msg.sig msg
	[ "$(stats_allocs)" -gt 0 ]
	cloaked pkey -in key.pem -pubout -out pub.pem
	run cloaked dgst -sha256 -verify pub.pem -signature msg.sig msg
	[ "$status" -eq 0 ]
	[ "$output" = "Verified OK" ]
	echo tampered >>msg
	run cloaked dgst -sha256 -verify pub.pem -signature msg.sig msg
	[ "$status" -ne 0 ]
}

@test "EC P-256: keygen, sign, verify with the preload; secret memory is used" {
	cloaked genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out key.pem
	grep -q 'backend memfd_secret' stats
	[ "$(stats_allocs)" -gt 0 ]
	sign_and_verify
}

@test "RSA 2048: keygen, sign, verify with the preload; secret memory is used" {
	cloaked genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out key.pem
	grep -q 'backend memfd_secret' stats
	[ "$(stats_allocs)" -gt 0 ]
	sign_and_verify
}

@test "CLOAK_OPENSSL_ALL=1 moves every OPENSSL_malloc into secret memory" {
	cloaked genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out key.pem
	secure_only=$(stats_allocs)
	CLOAK_OPENSSL_ALL=1 cloaked genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out key2.pem
	[ "$(stats_allocs)" -gt $((secure_only * 10)) ]
	CLOAK_OPENSSL_ALL=1 sign_and_verify
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

@test "the private key is in a core dump without the preload and absent with it" {
	pattern=$(cat /proc/sys/kernel/core_pattern)
	if [[ $pattern == "|"* || $pattern == */* ]]; then
		[ "${CLOAK_REQUIRE_KVM:-}" != 1 ] || { echo "core_pattern '$pattern' writes no core here"; false; }
		skip "kernel.core_pattern '$pattern' does not write core files in the working directory"
	fi
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out key.pem
	priv=$(openssl pkey -in key.pem -text -noout | sed -n '/^priv:/,/^pub:/p' | grep -vE '^(priv|pub):' | tr -d ' :\n')
	priv=${priv: -64} # 32 bytes; openssl may print a leading 00
	[ ${#priv} -eq 64 ]

	core=$(core_of_signing_openssl)
	if [ -z "$core" ]; then
		[ "${CLOAK_REQUIRE_KVM:-}" != 1 ] || { echo "no core file was written"; false; }
		skip "no core file was written (limits or core_pattern)"
	fi
	# Without the preload: the key's BIGNUM (little-endian limbs) is in the heap.
	"$MEMSEARCH" "$core" "$priv" --le

	# Secure heap in secret memory: the BIGNUM is gone from the dump. (The
	# big-endian copy in OpenSSL's DER decoding buffers is ordinary heap.)
	core=$(core_of_signing_openssl LD_PRELOAD="$PRELOAD")
	[ -n "$core" ]
	run "$MEMSEARCH" "$core" "$priv" --le
	[ "$status" -eq 1 ]

	# Everything OpenSSL allocates in secret memory: neither form remains.
	core=$(core_of_signing_openssl LD_PRELOAD="$PRELOAD" CLOAK_OPENSSL_ALL=1)
	[ -n "$core" ]
	run "$MEMSEARCH" "$core" "$priv" --le
	[ "$status" -eq 1 ]
	run "$MEMSEARCH" "$core" "$priv"
	[ "$status" -eq 1 ]
}

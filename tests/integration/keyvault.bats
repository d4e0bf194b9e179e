#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The keyvault example: sign with a key that never leaves protected memory,
# verify with OpenSSL, and look for the key everywhere the host can see.
load helpers

KV=$ROOT/$O/examples/keyvault.elf
CLIENT=$ROOT/$O/cloak-keyvault

setup() {
	TMP=$(mktemp -d)
}

teardown() {
	[ -n "${PID:-}" ] && kill "$PID" 2>/dev/null || true
	rm -rf "$TMP"
}

# scan HASH FILE...: fails if any 32-byte window of any FILE, read forwards
# or byte-reversed, has SHA-256 equal to HASH. The test knows only the
# hash of the private scalar (the guest's test hook), never the scalar.
scan() {
	python3 - "$@" <<'PY'
import hashlib, sys
target = bytes.fromhex(sys.argv[1])
for path in sys.argv[2:]:
    data = open(path, "rb").read()
    for i in range(len(data) - 31):
        w = data[i:i + 32]
        if hashlib.sha256(w).digest() == target or hashlib.sha256(w[::-1]).digest() == target:
            sys.exit("found in %s at offset %d" % (path, i))
PY
}

@test "keyvault signs a digest that openssl verifies; its private key is nowhere the host can see" {
	need_kvm
	truncate -s 4K "$TMP/state.img"
	timeout 120 "$CLOAK" --channel kv=listen:"$TMP/kv.sock" --block state="$TMP/state.img" \
		--dump-shared="$TMP/shared.dump" "$KV" --test-hooks > "$TMP/monitor.out" 2>&1 &
	PID=$!
	c() { timeout 60 "$CLIENT" --record "$TMP/traffic" "$TMP/kv.sock" "$@"; }
	run c info
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^entropy:\ rdseed\ (used|failed|absent),\ rdrand\ (used|failed|absent),\ host\ used ]]
	c pubkey "$TMP/pub.pem"
	echo "a message for the vault" > "$TMP/msg"
	c sign "$TMP/msg" "$TMP/sig.der"
	run openssl dgst -sha256 -verify "$TMP/pub.pem" -signature "$TMP/sig.der" "$TMP/msg"
	[ "$status" -eq 0 ]
	[[ "$output" == "Verified OK" ]]
	echo "another message" > "$TMP/other"
	run openssl dgst -sha256 -verify "$TMP/pub.pem" -signature "$TMP/sig.der" "$TMP/other"
	[ "$status" -ne 0 ]
	keyhash=$(c keyhash)
	[[ "$keyhash" =~ ^[0-9a-f]{64}$ ]]
	c quit
	wait "$PID"
	PID=
	grep -q "keyvault: 1 signatures, bye" "$TMP/monitor.out"
	# The dump holds at least the call pages and the bounce pool.
	[ "$(stat -c %s "$TMP/shared.dump")" -ge $((65 * 4096)) ]
	grep -q "CLKVAULT" "$TMP/state.img"
	# Positive control: the scanner finds a 32-byte value that is there
	# (the public key's X coordinate, in the traffic and the disk state).
	openssl pkey -pubin -in "$TMP/pub.pem" -outform DER | tail -c 64 | head -c 32 > "$TMP/x"
	xhash=$(sha256sum "$TMP/x" | cut -d' ' -f1)
	run scan "$xhash" "$TMP/state.img"
	[ "$status" -ne 0 ]
	run scan "$xhash" "$TMP/traffic"
	[ "$status" -ne 0 ]
	# The private key: not in the disk image, the channel traffic, the
	# monitor's output, nor any page the guest shared.
	scan "$keyhash" "$TMP/state.img" "$TMP/traffic" "$TMP/monitor.out" "$TMP/shared.dump"
}

@test "keyvault without its channel says how to run it" {
	need_kvm
	run_cloak "$KV"
	[ "$status" -eq 1 ]
	[[ "$output" == *"run with --channel kv=listen:PATH"* ]]
}

@test "the key-hash test hook is refused without --test-hooks" {
	need_kvm
	timeout 120 "$CLOAK" --channel kv=listen:"$TMP/kv.sock" "$KV" > "$TMP/out" 2>&1 &
	PID=$!
	run timeout 60 "$CLIENT" "$TMP/kv.sock" keyhash
	[ "$status" -ne 0 ]
	[[ "$output" == *"keyhash needs --test-hooks"* ]]
	timeout 60 "$CLIENT" "$TMP/kv.sock" quit
	wait "$PID"
	PID=
}

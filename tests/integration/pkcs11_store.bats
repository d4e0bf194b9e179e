#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The PKCS#11 token's persistent store (docs/pkcs11-store.md): the token
# guest on a store image made by `cloak-pkcs11 init`, driven by opensc's
# pkcs11-tool through libcloak-pkcs11.so, signatures checked by `openssl`.
# The store's cryptography is Debian's libsodium, which uses SSE: where
# KVM emulates guest code the guest cannot run it, so this suite needs a
# CPU that runs guest code (the SVM tier runs it).
bats_require_minimum_version 1.5.0
load helpers
load "$ROOT/services/pkcs11/testing/pkcs11_helpers"

LAUNCHER=$ROOT/$O/cloak-pkcs11
SCAN=$ROOT/tests/integration/keyscan.py

setup() {
	TMP=$(mktemp -d)
	IMG=$TMP/token.img
	# CLOAK: the suite's monitor (with CLOAK_TEST_MEMORY's backend).
	export TMPDIR=$TMP XDG_DATA_HOME=$TMP/data CLOAK
	unset CLOAK_PKCS11_PID CLOAK_PKCS11_SOCKET
}

teardown() {
	[ -n "${CLOAK_PKCS11_PID:-}" ] && kill -9 "$CLOAK_PKCS11_PID" 2>/dev/null
	rm -rf "$TMP"
	true
}

need_store() {
	need_native_cpu "where the store's libsodium (SSE) cannot run"
	need_cmd pkcs11-tool opensc
	need_cmd python3 python3
}

# init_image: a token "stored" in $IMG, PINs on standard input.
init_image() {
	"$LAUNCHER" init -s "$IMG" --label stored < <(printf '%s\n%s\n' "$SO_PIN" "$PIN") 3>&-
}

# start_token [-- GUEST-ARGS]: the token on $IMG; exports its socket and
# pid. The token gets no fd 3 (bats waits for every holder of it) and a
# time limit.
start_token() {
	local out
	out=$(CLOAK_ARGS=--timeout=900 "$LAUNCHER" start -s "$IMG" "$@" 3>&-) || { echo "$out"; return 1; }
	eval "$out"
}

# new_store: a fresh store image (init_image), the token started on it.
new_store() {
	run init_image
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	start_token
}

stop_token() {
	eval "$("$LAUNCHER" stop)"
}

token_log() {
	cat "$(dirname "$CLOAK_PKCS11_SOCKET")/token.log"
}

# sign_verify ID PEM: signs $TMP/msg (ECDSA-SHA256), openssl verifies
# against the public key in PEM.
sign_verify() {
	p11 --login --pin "$PIN" --sign --id "$1" -m ECDSA-SHA256 --signature-format openssl \
		-i "$TMP/msg" -o "$TMP/sig$1" || return 1
	openssl dgst -sha256 -verify "$2" -signature "$TMP/sig$1" "$TMP/msg"
}

# private_keys: how many private key objects the user sees.
private_keys() {
	p11 --login --pin "$PIN" -O --type privkey | grep -c 'Private Key Object' || true
}

@test "store: init makes an owner-only image; a key made in the guest and an imported one survive stop and start and still sign (openssl verifies); the image holds no PIN and no key byte in any encoding" {
	need_store
	run init_image
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[ "$(stat -c %a "$IMG")" = 600 ]
	run init_image
	[ "$status" -eq 1 ] || { echo "$output"; return 1; }
	[[ "$output" == *"exists"*"-f"* ]] || { echo "$output"; return 1; }
	start_token
	run p11 -T
	[[ "$output" == *"stored"* ]] || { echo "$output"; return 1; }
	[[ "$output" == *"PIN initialized"* ]] || { echo "$output"; return 1; }
	run p11 --login --pin "$PIN" --keypairgen --key-type EC:prime256v1 --id 01 --label made
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	openssl ecparam -name prime256v1 -genkey -noout -out "$TMP/k.pem"
	openssl ec -in "$TMP/k.pem" -pubout -out "$TMP/pub02.pem" 2>/dev/null
	local scalar
	scalar=$(openssl ec -in "$TMP/k.pem" -outform DER 2>/dev/null | tail -c +8 | head -c 32 | od -An -v -tx1 | tr -d ' \n')
	[ ${#scalar} -eq 64 ]
	run p11 --login --pin "$PIN" --write-object "$TMP/k.pem" --type privkey --id 02 --label imported --sensitive
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	pubkey_pem 01
	echo "signed in a cloak guest $RANDOM" > "$TMP/msg"
	run sign_verify 01 "$TMP/pub01.pem"
	[[ "$output" == *"Verified OK"* ]] || { echo "$output"; return 1; }
	stop_token
	start_token
	[ "$(private_keys)" -eq 2 ]
	echo "signed after a restart $RANDOM" > "$TMP/msg"
	run sign_verify 01 "$TMP/pub01.pem"
	[[ "$output" == *"Verified OK"* ]] || { echo "$output"; return 1; }
	run sign_verify 02 "$TMP/pub02.pem"
	[[ "$output" == *"Verified OK"* ]] || { echo "$output"; return 1; }
	stop_token
	# The imported key's scalar in no encoding; the PINs nowhere in clear.
	run python3 "$SCAN" key "$scalar" "$IMG"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	run grep -c -a -e "$SO_PIN" -e "$PIN" "$IMG"
	[ "$output" = 0 ] || { echo "$output"; return 1; }
	# Positive control: the same scan finds the scalar planted in a copy.
	cp "$IMG" "$TMP/planted.img"
	printf '%s' "$scalar" | xxd -r -p | dd of="$TMP/planted.img" bs=1 seek=300000 conv=notrunc status=none
	run python3 "$SCAN" key "$scalar" "$TMP/planted.img"
	[ "$status" -eq 1 ] || { echo "$output"; return 1; }
	[[ "$output" == *"found big-endian"* ]] || { echo "$output"; return 1; }
}

# serial: the token's serial number, as pkcs11-tool prints it.
serial() {
	p11 -T | sed -n 's/^ *serial num *: *//p'
}

@test "store: the serial number is the same after a restart, so a pkcs11: URI with serial= (p11tool's) finds the token again; a new token (init -f) has a new one" {
	need_store
	need_cmd p11tool gnutls-bin
	new_store
	local first uri
	first=$(serial)
	[ ${#first} -eq 16 ] || { echo "serial '$first'"; return 1; }
	uri=$(timeout 120 p11tool --provider "$MODULE" --list-token-urls | grep 'token=stored')
	[[ $uri == *"serial=$first"* ]] || { echo "$uri"; return 1; }
	stop_token
	start_token
	[ "$(serial)" = "$first" ]
	run timeout 120 p11tool --provider "$MODULE" --list-token-urls
	[[ $output == *"$uri"* ]] || { echo "$output"; return 1; }
	# The URI with serial= names the token: its objects list through it.
	run p11 --login --pin "$PIN" --keypairgen --key-type EC:prime256v1 --id 07 --label byserial
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	export GNUTLS_PIN=$PIN
	run timeout 120 p11tool --provider "$MODULE" --login --list-privkeys "$uri"
	[[ $output == *byserial* ]] || { echo "$output"; return 1; }
	# The control: another serial finds no token.
	run timeout 120 p11tool --provider "$MODULE" --login --list-privkeys "pkcs11:serial=0000000000000000"
	[[ $output != *byserial* ]] || { echo "$output"; return 1; }
	stop_token
	run "$LAUNCHER" init -f -s "$IMG" --label stored < <(printf '%s\n%s\n' "$SO_PIN" "$PIN") 3>&-
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	start_token
	[ "$(serial)" != "$first" ]
	[ ${#first} -eq 16 ]
}

@test "store: wrong PINs get CKR_PIN_INCORRECT until the tries run out, then CKR_PIN_LOCKED with the token's flags; the count survives a restart; the SO unlocks with a new user PIN" {
	need_store
	new_store
	for _ in 1 2 3; do
		run p11 --login --pin 00000000 -O
		[[ "$output" == *CKR_PIN_INCORRECT* ]] || { echo "$output"; return 1; }
	done
	run p11 -T
	[[ "$output" == *"user PIN count low"* ]] || { echo "$output"; return 1; }
	stop_token
	start_token
	run p11 -T
	[[ "$output" == *"user PIN count low"* ]] || { echo "$output"; return 1; }
	for _ in 4 5 6 7 8 9; do
		run p11 --login --pin 00000000 -O
		[[ "$output" == *CKR_PIN_INCORRECT* ]] || { echo "$output"; return 1; }
	done
	run p11 -T
	[[ "$output" == *"final user PIN try"* ]] || { echo "$output"; return 1; }
	run p11 --login --pin 00000000 -O
	[[ "$output" == *CKR_PIN_INCORRECT* ]] || { echo "$output"; return 1; }
	stop_token
	start_token
	run p11 --login --pin "$PIN" -O
	[[ "$output" == *CKR_PIN_LOCKED* ]] || { echo "$output"; return 1; }
	run p11 -T
	[[ "$output" == *"user PIN locked"* ]] || { echo "$output"; return 1; }
	run p11 --login --login-type so --so-pin "$SO_PIN" --init-pin --new-pin 24681357
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	run p11 --login --pin 24681357 -O
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	run p11 -T
	[[ "$output" != *"user PIN locked"* ]] || { echo "$output"; return 1; }
}

@test "store: an image altered in its data refuses login (CKR_DEVICE_ERROR, the log says why); with both headers damaged the launcher refuses to start and says what to do" {
	need_store
	new_store
	run p11 --login --pin "$PIN" --keypairgen --key-type EC:prime256v1 --id 01
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	stop_token
	# One byte of each data slot (sector 2, and 2 + 513: store.c's layout
	# for 512-byte sectors); one of them holds the object set.
	local off
	for off in 1024 263680; do
		printf '\x5a' | dd of="$IMG" bs=1 seek=$((off + 7)) conv=notrunc status=none
	done
	start_token
	run p11 --login --pin "$PIN" -O
	[ "$status" -ne 0 ] || { echo "$output"; return 1; }
	[[ "$output" == *CKR_DEVICE_ERROR* ]] || { echo "$output"; return 1; }
	run token_log
	[[ "$output" == *"altered or rolled back"*"restore it from a backup"* ]] || { echo "$output"; return 1; }
	stop_token
	for off in 100 612; do
		printf '\x5a' | dd of="$IMG" bs=1 seek="$off" conv=notrunc status=none
	done
	CLOAK_ARGS=--timeout=900 run "$LAUNCHER" start -s "$IMG" 3>&-
	# A token that started anyway is stopped by teardown.
	[ "$status" -eq 1 ] || { echo "$output"; eval "$output"; return 1; }
	[[ "$output" == *"damaged or was altered"* ]] || { echo "$output"; return 1; }
	[[ "$output" == *"init -f -s"* ]] || { echo "$output"; return 1; }
}

# data_sum: a checksum of the image past its two header sectors (the data
# slots), which only a commit writes.
data_sum() {
	tail -c +1025 "$IMG" | cksum
}

# kill_when_data_written: SIGKILLs the token as soon as a commit has
# written to the data slots (before or after its header write: either is
# a point a crash may hit), or after 60 s.
kill_when_data_written() {
	local sum
	sum=$(data_sum)
	for _ in $(seq 20000); do
		[ "$(data_sum)" != "$sum" ] && break
		kill -0 "$CLOAK_PKCS11_PID" 2>/dev/null || break
		[ "$SECONDS" -lt "$1" ] || break
	done
	kill -9 "$CLOAK_PKCS11_PID"
}

@test "store: the token killed (SIGKILL) during login, key generation and its commit leaves the old or the new object set, never a broken store" {
	need_store
	new_store
	# One uninterrupted login + key generation + commit, timed, sets the
	# kill delays: at 10%, 30% and 60% of it (the login's tries written,
	# the derivation, the key generation), then twice the moment the
	# commit's data reaches the image.
	local t0 t1 ms n=1 before after id kept=0 at
	t0=$(date +%s%N)
	p11 --login --pin "$PIN" --keypairgen --key-type EC:prime256v1 --id 01 > /dev/null
	t1=$(date +%s%N)
	ms=$(((t1 - t0) / 1000000))
	before=$(private_keys)
	[ "$before" -eq 1 ]
	for at in 10 30 60 data data; do
		id=$(printf '%02x' $((n + 1)))
		p11 --login --pin "$PIN" --keypairgen --key-type EC:prime256v1 --id "$id" > /dev/null 2>&1 &
		if [ "$at" = data ]; then
			kill_when_data_written $((SECONDS + 60))
		else
			sleep "$(awk -v ms="$ms" -v p="$at" 'BEGIN { printf "%.3f", ms * p / 100000 }')"
			kill -9 "$CLOAK_PKCS11_PID"
		fi
		wait || true
		CLOAK_PKCS11_PID=
		start_token || { echo "restart after a kill at $at refused the store"; return 1; }
		after=$(private_keys)
		echo "# kill at $at (% of $ms ms, or the data write): $before -> $after keys" >&3
		{ [ "$after" -eq "$before" ] || [ "$after" -eq $((before + 1)) ]; } || return 1
		[ "$after" -eq "$before" ] && kept=$((kept + 1))
		before=$after
		n=$((n + 1))
	done
	# Some kill came before a commit finished (else none tested a crash).
	[ "$kept" -ge 1 ]
	echo "signed after the kills $RANDOM" > "$TMP/msg"
	pubkey_pem 01
	run sign_verify 01 "$TMP/pub01.pem"
	[[ "$output" == *"Verified OK"* ]] || { echo "$output"; return 1; }
}

@test "store: the token killed (SIGKILL) between a commit's data write and its header write comes back with the previous object set, and commits on" {
	need_store
	new_store
	p11 --login --pin "$PIN" --keypairgen --key-type EC:prime256v1 --id 01 > /dev/null
	[ "$(private_keys)" -eq 1 ]
	stop_token
	# The guest's test hook stalls the next commit once its data is
	# written and flushed, before its header is written: the kill lands
	# exactly there.
	start_token -- --test-stall-commit
	local sum
	sum=$(data_sum)
	p11 --login --pin "$PIN" --keypairgen --key-type EC:prime256v1 --id 02 > "$TMP/keygen.out" 2>&1 &
	wait_for_line "$CLOAK_PKCS11_PID" "$(dirname "$CLOAK_PKCS11_SOCKET")/token.log" \
		'test hook: .* stalling'
	kill -9 "$CLOAK_PKCS11_PID"
	wait || true
	CLOAK_PKCS11_PID=
	# The new data reached the image; its header did not.
	[ "$(data_sum)" != "$sum" ] || { echo "the data slots did not change"; return 1; }
	start_token || { echo "the store was refused after the kill"; return 1; }
	[ "$(private_keys)" -eq 1 ] || { echo "not the previous object set"; token_log; return 1; }
	echo "signed after the kill $RANDOM" > "$TMP/msg"
	pubkey_pem 01
	run sign_verify 01 "$TMP/pub01.pem"
	[[ "$output" == *"Verified OK"* ]] || { echo "$output"; return 1; }
	# The next commit goes to the slot the cut one wrote, and lasts.
	p11 --login --pin "$PIN" --keypairgen --key-type EC:prime256v1 --id 03 > /dev/null
	stop_token
	start_token
	[ "$(private_keys)" -eq 2 ]
}

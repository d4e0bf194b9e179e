#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# A key moved from one token to another (docs/pkcs11.md "Moving a key to
# another token"), two token guests under two monitors, each on its own
# store image and socket, as two hosts would run them: token B makes an
# unwrapping RSA key pair; A's SO imports B's public key as trusted and
# makes a trusted AES transport key; A wraps an exportable AES key under
# B's key (RSA-OAEP), an exportable P-256 key under the transport key
# (CKM_AES_KEY_WRAP_KWP) and the transport key under B's key; the wrapped
# bytes cross as files; B unwraps them as sensitive, unextractable keys,
# which decrypt what A encrypted and sign what A's public key verifies.
# Then no page either guest shared (--dump-shared), no monitor process
# (/proc/PID/mem, each process of each monitor, guest RAM only where the
# backend keeps it from /proc/PID/mem) and neither store image
# nor monitor log holds either key, or the transport key, in any encoding
# keyscan.py knows; each scan beside a control that finds a planted value.
# The stores' libsodium needs a CPU that runs guest code (the SVM tier);
# /proc/PID/mem needs root.
bats_require_minimum_version 1.5.0
load helpers
load "$ROOT/services/pkcs11/testing/pkcs11_helpers"

LAUNCHER=$ROOT/$O/cloak-pkcs11
SCAN=$ROOT/tests/integration/keyscan.py
PROBE=$ROOT/services/pkcs11/testing/p11_probe.py

setup() {
	TMP=$(mktemp -d)
	export TMPDIR=$TMP XDG_DATA_HOME=$TMP/data CLOAK
	unset CLOAK_PKCS11_PID CLOAK_PKCS11_SOCKET
	A_PID='' B_PID='' HOLDER=''
}

teardown() {
	local p
	for p in "$A_PID" "$B_PID" "$HOLDER"; do
		[ -n "$p" ] && kill -9 "$p" 2> /dev/null
	done
	rm -rf "$TMP"
	true
}

# token NAME: a token labelled NAME on its own store image $TMP/NAME.img
# (`cloak-pkcs11 init`), started by `cloak-pkcs11 start` (its own
# directory, socket and log) with the pages it shares written at exit to $TMP/NAME.shared; sets
# NAME_PID and NAME_SOCK. No fd 3 for the token (bats waits for every
# holder of it).
token() {
	local out
	"$LAUNCHER" init -s "$TMP/$1.img" --label "$1" < <(printf '%s\n%s\n' "$SO_PIN" "$PIN") 3>&- ||
		return 1
	out=$(CLOAK_ARGS="--timeout=900 --dump-shared=$TMP/$1.shared" \
		"$LAUNCHER" start -s "$TMP/$1.img" 3>&-) || { echo "$out"; return 1; }
	eval "$out"
	printf -v "$1_PID" %s "$CLOAK_PKCS11_PID"
	printf -v "$1_SOCK" %s "$CLOAK_PKCS11_SOCKET"
	unset CLOAK_PKCS11_PID CLOAK_PKCS11_SOCKET
}

# stop NAME: `cloak-pkcs11 stop` on token NAME (the monitor writes the
# shared pages, wipes guest memory and exits); its log kept as
# $TMP/NAME.log first (stop removes the token's directory).
stop() {
	local pid=$1_PID sock=$1_SOCK
	cp "$(dirname "${!sock}")/token.log" "$TMP/$1.log" || return 1
	CLOAK_PKCS11_PID=${!pid} CLOAK_PKCS11_SOCKET=${!sock} "$LAUNCHER" stop > /dev/null || return 1
	printf -v "$1_PID" %s ''
}

# at NAME CMD...: CMD with the module on token NAME's socket.
at() {
	local sock=$1_SOCK
	export CLOAK_PKCS11_SOCKET=${!sock}
	"${@:2}"
}

# tree PID: PID and its descendants (a monitor is its vCPU runner, its
# device process and its path broker).
tree() {
	local c
	echo "$1"
	for c in $(ps -o pid= --ppid "$1"); do tree "$c"; done
}

# modulus DER: the modulus (hex) of the RSA-2048 public key DER (an
# exponent of 65537, checked).
modulus() {
	openssl rsa -pubin -inform DER -in "$1" -noout -text | grep -qx 'Exponent: 65537 (0x10001)' || return 1
	openssl rsa -pubin -inform DER -in "$1" -noout -modulus | sed 's/^Modulus=//'
}

# planted HEX FILE...: the scan finds HEX written into the middle of a copy
# of each FILE, in each copy (the control: this scan of these files can
# fail); one pass over all the copies.
planted() {
	local f copy copies=()
	for f in "${@:2}"; do
		copy=$TMP/planted.$(basename "$f")
		cp "$f" "$copy"
		printf '%s' "$1" | xxd -r -p |
			dd of="$copy" bs=1 seek=$(($(stat -c %s "$f") / 2)) conv=notrunc status=none
		copies+=("$copy")
	done
	run "$SCAN" key "$1" "${copies[@]}"
	[ "$status" -eq 1 ] || { echo "control: $1 not found planted: $output"; return 1; }
	for copy in "${copies[@]}"; do
		grep -q " in $copy at " <<< "$output" || { echo "control: not found in $copy: $output"; return 1; }
	done
}

@test "a P-256 key and an AES key move from token A to token B wrapped (RSA-OAEP, AES key wrap with padding): B's copies sign and decrypt as A's did, sensitive and unextractable; neither is in any monitor's memory, shared page, store or log" {
	need_native_cpu "where the stores' libsodium (SSE) cannot run"
	need_root # /proc/PID/mem of the monitors
	need_cmd pkcs11-tool opensc
	need_cmd xxd xxd
	run "$SCAN" selftest
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	token A
	token B
	mkdir "$TMP/move" "$TMP/oracle" "$TMP/b-in"

	# B, the destination: an RSA-2048 key pair whose private half unwraps
	# (and so never decrypts); its public key leaves as a file.
	run at B python3 "$PROBE" "$MODULE" move-keypair "$PIN"
	output_has "keypair 0x0" "unwrap-key unwrap=1 decrypt=0"
	at B p11 --read-object --type pubkey --id 0b -o "$TMP/b.der"

	# The oracle: an RSA key pair the test holds, which A's SO trusts as
	# well. The test learns the moving keys' values only from what A wraps
	# under it (openssl decrypts it on the host), so that they are known
	# to the scans without being made outside the token; the monitors
	# carry only the wrapped bytes of it.
	openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$TMP/oracle.pem" 2> /dev/null
	openssl pkey -in "$TMP/oracle.pem" -pubout -outform DER -out "$TMP/oracle.der"

	# A's SO, after checking B's key out of band: trusted, with the
	# oracle's, and the transport key.
	run at A python3 "$PROBE" "$MODULE" move-trust "$SO_PIN" 0b "$(modulus "$TMP/b.der")"
	output_has "trusted 0x0"
	run at A python3 "$PROBE" "$MODULE" move-trust "$SO_PIN" 0c "$(modulus "$TMP/oracle.der")"
	output_has "trusted 0x0"
	run at A python3 "$PROBE" "$MODULE" move-trust "$SO_PIN" transport
	output_has "transport 0x0"

	# A's user: the keys that will move, made in A, exportable; A signs
	# and encrypts with them before the move.
	at A p11 --login --pin "$PIN" --keygen --key-type AES:32 --extractable --sensitive \
		--usage-decrypt --id 0a --label moving > /dev/null
	at A p11 --login --pin "$PIN" --keypairgen --key-type EC:prime256v1 --extractable \
		--usage-sign --id 0e --label moving > /dev/null
	at A pubkey_pem 0e
	echo "signed on A and on B $RANDOM" > "$TMP/msg"
	local iv=000102030405060708090a0b0c0d0e0f
	at A p11 --login --pin "$PIN" --encrypt -m AES-CBC-PAD --iv "$iv" --id 0a \
		-i "$TMP/msg" -o "$TMP/a.enc"
	[ "$(stat -c %s "$TMP/a.enc")" -gt 16 ]

	# A wraps them under B's key (and, for the test, the oracle's); the
	# token refuses the P-256 key under RSA-OAEP and either key under an
	# AES key its user made (not trusted): CKR_KEY_NOT_WRAPPABLE.
	run at A python3 "$PROBE" "$MODULE" move-wrap "$PIN" 0b "$TMP/move"
	output_has "aes-key sensitive=1 extractable=1 wrap-with-trusted=1" \
		"ec-key sensitive=1 extractable=1 wrap-with-trusted=1" \
		"wrap-aes 0x0" "wrap-aes-len 256" "wrap-transport 0x0" "wrap-transport-len 256" "wrap-ec 0x0" \
		"wrap-ec-oaep 0x69" "user-kek 0x0" "wrap-ec-untrusted 0x69" "wrap-aes-untrusted 0x69"
	run at A python3 "$PROBE" "$MODULE" move-wrap "$PIN" 0c "$TMP/oracle"
	output_has "wrap-aes 0x0" "wrap-transport 0x0" "wrap-ec 0x0"

	# The crossing: files.
	cp "$TMP"/move/*.wrap "$TMP/b-in/"

	# B unwraps: sensitive, not extractable, the values refused.
	run at B python3 "$PROBE" "$MODULE" move-unwrap "$PIN" "$TMP/b-in"
	output_has "unwrap-aes 0x0" "unwrap-transport 0x0" "unwrap-ec 0x0" \
		"moved-aes sensitive=1 extractable=0 local=0 value=0x11" \
		"moved-ec sensitive=1 extractable=0 local=0 value=0x11"

	# The same keys: B decrypts what A encrypted, and B's signature
	# verifies with A's public key (the control: not another message).
	at B p11 --login --pin "$PIN" --decrypt -m AES-CBC-PAD --iv "$iv" --id 0a \
		-i "$TMP/a.enc" -o "$TMP/b.dec"
	cmp "$TMP/msg" "$TMP/b.dec"
	at B p11 --login --pin "$PIN" --sign --id 0e -m ECDSA-SHA256 --signature-format openssl \
		-i "$TMP/msg" -o "$TMP/b.sig"
	run openssl dgst -sha256 -verify "$TMP/pub0e.pem" -signature "$TMP/b.sig" "$TMP/msg"
	[[ "$output" == *"Verified OK"* ]] || { echo "$output"; return 1; }
	{ cat "$TMP/msg"; echo changed; } > "$TMP/msg2"
	run ! openssl dgst -sha256 -verify "$TMP/pub0e.pem" -signature "$TMP/b.sig" "$TMP/msg2"

	# The values, from the oracle's wrappings; each checked against what
	# the token did with it, so that the scans look for the real keys.
	local aes transport scalar
	oaep() {
		openssl pkeyutl -decrypt -inkey "$TMP/oracle.pem" -pkeyopt rsa_padding_mode:oaep \
			-pkeyopt rsa_oaep_md:sha256 -pkeyopt rsa_mgf1_md:sha256 -in "$1" | xxd -p -c 64
	}
	aes=$(oaep "$TMP/oracle/aes.wrap")
	transport=$(oaep "$TMP/oracle/transport.wrap")
	[[ $aes =~ ^[0-9a-f]{64}$ && $transport =~ ^[0-9a-f]{64}$ ]]
	openssl enc -aes-256-cbc -K "$aes" -iv "$iv" -in "$TMP/msg" -out "$TMP/oracle.enc"
	cmp "$TMP/a.enc" "$TMP/oracle.enc"
	# The P-256 key: PKCS#8 under the transport key (RFC 5649's IV).
	openssl enc -d -id-aes256-wrap-pad -K "$transport" -iv A65959A6 -in "$TMP/oracle/ec.wrap" \
		-out "$TMP/oracle.p8"
	openssl pkey -inform DER -in "$TMP/oracle.p8" -pubout -outform DER | cmp - "$TMP/pub0e.der"
	scalar=$(openssl pkey -inform DER -in "$TMP/oracle.p8" -noout -text |
		awk '/^priv:/ { on = 1; next } /^pub:/ { on = 0 } on' | tr -d ' :\n')
	scalar=${scalar: -64}
	[[ $scalar =~ ^[0-9a-f]{64}$ ]] || { echo "no scalar: $scalar"; return 1; }

	# Every process of both monitors, while they run, holds none of the
	# three; the control: a process that holds the scalar is found.
	python3 -c 'import sys, time; k = bytes.fromhex(sys.argv[1]); print("x", flush=True); time.sleep(120)' \
		"$scalar" > "$TMP/holder.out" 3>&- &
	HOLDER=$!
	for _ in $(seq 50); do [ -s "$TMP/holder.out" ] && break; sleep 0.1; done
	local p pids all=$aes,$transport,$scalar
	run "$SCAN" key-proc "$scalar" "$HOLDER"
	[ "$status" -eq 1 ] || { echo "control not found in process $HOLDER: $output"; return 1; }
	pids=$( (tree "$A_PID"; tree "$B_PID") | tr '\n' ' ')
	[ "$(wc -w <<< "$pids")" -ge 4 ] || { echo "monitor processes: $pids"; return 1; }
	# Guest RAM itself (the keys live there) is scanned only where the
	# backend promises that /proc/PID/mem cannot read it (`cloak check`:
	# secret). Elsewhere (gmem where KVM cannot give the mapping up, as in
	# the SVM tier; shared) the monitor maps it and root reads it: every
	# other mapping is scanned, and the note says so.
	local how=key-proc b=${CLOAK_TEST_MEMORY:-$(auto_backend)}
	if [ "$(check_json | jq -r --arg b "$b" '.backends[] | select(.name == $b) | .protections[]
		| select(.id == "proc_pid_mem") | .promised')" != true ]; then
		how=key-proc-host
		echo "# --memory=$b does not keep guest RAM from /proc/PID/mem here: the monitors' guest RAM mappings not scanned" >&3
	fi
	for p in $pids; do
		run "$SCAN" "$how" "$all" "$p"
		[ "$status" -eq 0 ] || { echo "monitor process $p: $output"; return 1; }
	done

	# Stopped: the pages each guest shared (at least its 32-page bounce
	# pool), its store image and its log hold none of the three; the
	# control: the scalar planted in a copy of each file is found.
	stop A
	stop B
	local f files=()
	for f in A B; do
		[ "$(stat -c %s "$TMP/$f.shared")" -ge $((32 * 4096)) ]
		files+=("$TMP/$f.shared" "$TMP/$f.img" "$TMP/$f.log")
	done
	run "$SCAN" key "$all" "${files[@]}"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	planted "$scalar" "${files[@]}"
}

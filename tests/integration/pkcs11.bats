#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The PKCS#11 token guest (services/pkcs11, docs/pkcs11.md) through its
# module libcloak-pkcs11.so, driven by programs nobody here wrote: opensc's
# pkcs11-tool, GnuTLS's p11tool, p11-kit, with signatures checked by
# `openssl` (Ed25519's also beside SoftHSM2's, through the same steps). Every guest signature costs seconds where KVM emulates guest
# code (P-256: about 4 s per key generation or signature; P-384: about
# 16 s; RSA key generation tests many candidate primes: far longer), so
# P-384 and RSA run only where the CPU runs guest code (the SVM tier).
# CLOAK_TEST_MEMORY=secret|gmem|shared runs the suite on that backend.
bats_require_minimum_version 1.5.0
load helpers
load "$ROOT/services/pkcs11/testing/pkcs11_helpers"

LAUNCHER=$ROOT/$O/cloak-pkcs11
PROBE=$ROOT/services/pkcs11/testing/p11_probe.py

setup() {
	TMP=$(mktemp -d)
	TOKEN_PID=
}

teardown() {
	[ -n "$TOKEN_PID" ] && kill "$TOKEN_PID" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$TMP"
	true
}


# keygen ID CURVE: a key pair generated in the guest.
keygen() {
	p11 --login --pin "$PIN" --keypairgen --key-type "EC:$2" --id "$1" --label "key$1"
}

# sign_verify ID MECH DGST: signs $TMP/msg with pkcs11-tool, verifies with
# `openssl dgst` against the public key the token exports ($TMP/pubID.pem).
sign_verify() {
	p11 --login --pin "$PIN" --sign --id "$1" -m "$2" --signature-format openssl \
		-i "$TMP/msg" -o "$TMP/sig$1" || return 1
	openssl dgst "-$3" -verify "$TMP/pub$1.pem" -signature "$TMP/sig$1" "$TMP/msg"
}

@test "pkcs11-tool: init, login, P-256 key pair made in the guest, list, sign (ECDSA-SHA256, ECDSA raw); openssl verifies" {
	start_memory_token
	# The token's ready line into the log (which code signs: OpenSSL
	# where CPUID shows SSSE3, else Nettle; which AES).
	local ready
	ready=$(grep -m1 '^pkcs11: ready' "$TMP/monitor.out")
	echo "# $ready" >&3
	[[ "$ready" == *"; sign: openssl" || "$ready" == *"; sign: nettle" ]] || { echo "$ready"; return 1; }
	run p11 -L
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ "$output" == *"uninitialized"* ]] || { echo "$output"; return 1; }
	run init_token
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	run p11 -T
	[[ "$output" == *"cloak-test"* ]] || { echo "$output"; return 1; }
	[[ "$output" == *"PIN initialized"* ]] || { echo "$output"; return 1; }
	run p11 --login --pin 000000 -O
	[ "$status" -ne 0 ] || { echo "$output"; return 1; }
	[[ "$output" == *CKR_PIN_INCORRECT* ]] || { echo "$output"; return 1; }
	run keygen 01 prime256v1
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ "$output" == *"never extractable"* ]] || { echo "$output"; return 1; }
	run p11 --login --pin "$PIN" -O
	[ "$(grep -c 'Private Key Object; EC' <<< "$output")" -eq 1 ] || { echo "$output"; return 1; }
	[ "$(grep -c 'Public Key Object; EC' <<< "$output")" -eq 1 ] || { echo "$output"; return 1; }
	pubkey_pem 01
	echo "signed in a cloak guest $RANDOM" > "$TMP/msg"
	run sign_verify 01 ECDSA-SHA256 sha256
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ "$output" == *"Verified OK"* ]] || { echo "$output"; return 1; }
	# Raw ECDSA signs a hash the caller made.
	openssl dgst -sha256 -binary "$TMP/msg" > "$TMP/hash"
	p11 --login --pin "$PIN" --sign --id 01 -m ECDSA --signature-format openssl \
		-i "$TMP/hash" -o "$TMP/rawsig"
	run openssl pkeyutl -verify -pubin -inkey "$TMP/pub01.pem" -in "$TMP/hash" -sigfile "$TMP/rawsig"
	[[ "$output" == *"Signature Verified Successfully"* ]] || { echo "$output"; return 1; }
	# The positive control: another message does not verify.
	echo "not what was signed" > "$TMP/msg"
	run openssl dgst -sha256 -verify "$TMP/pub01.pem" -signature "$TMP/sig01" "$TMP/msg"
	[ "$status" -ne 0 ] || { echo "$output"; return 1; }
	# pkcs11-tool's own self-test (mechanisms, sessions, random, ...).
	run p11 --login --pin "$PIN" --test
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ "$output" == *"No errors"* ]] || { echo "$output"; return 1; }
}

@test "a private key's value never leaves: CKA_VALUE is CKR_ATTRIBUTE_SENSITIVE, non-sensitive keys are refused, an extractable one goes only under trusted keys" {
	start_memory_token
	init_token
	keygen 01 prime256v1
	run python3 "$PROBE" "$MODULE" private "$PIN"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	output_has "wrong-pin 0xa0" "login 0x0" "private-keys 1" "value 0x11" \
		"value-len 0xffffffffffffffff bytes 0000000000000000" "params 0x0" \
		"unsensitive 0x10" "extractable 0x10" "import-unsensitive 0x13" \
		"import-extractable 0x0" "import-extractable wrap-with-trusted 0x0 1" "import 0x0" \
		"import-value 0x11"
}

@test "C_Initialize again in a child after fork gets a session of its own; the parent keeps its own" {
	start_memory_token
	init_token
	run python3 "$PROBE" "$MODULE" fork
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	output_has "parent-initialize 0x0" "child-before 0x190" "child-initialize 0x0" "child-slots 0x0" \
		"child-count 1" "parent-again 0x191" "parent-slots 0x0"
}

# deferred_sign: the module's deferred C_SignInit (p11_probe.py deferred)
# on the initialised token at CLOAK_PKCS11_SOCKET, with a P-256 key made
# there: the signatures verify, a second C_SignInit is refused, the
# token's errors still come back.
deferred_sign() {
	keygen 01 prime256v1 || return 1
	pubkey_pem 01 || return 1
	echo "signed in a cloak guest $RANDOM" | openssl dgst -sha256 -binary > "$TMP/hash"
	run python3 "$PROBE" "$MODULE" deferred "$PIN" key01 "$TMP/hash" "$TMP"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	# 0x90 CKR_OPERATION_ACTIVE, 0x60 CKR_KEY_HANDLE_INVALID
	output_has "keys 1" "keygen 0x0" "first-init 0x0" "first-sign 0x0" "again-init 0x0" "again-sign 0x0" \
		"deferred-init 0x0" "deferred-init-twice 0x90" "deferred-sign 0x0" "gone-init 0x0" "deleted 0" \
		"gone-sign 0x60" "gone-init-again 0x60" "sha256-init 0x0" "sha256-init-twice 0x90" "sha256-sign 0x0" ||
		return 1
	local sig
	for sig in first-sign again-sign deferred-sign; do
		run openssl pkeyutl -verify -pubin -inkey "$TMP/pub01.pem" -in "$TMP/hash" -sigfile "$TMP/$sig.der"
		[[ "$output" == *"Signature Verified Successfully"* ]] || { echo "$sig: $output"; return 1; }
	done
	# The control: another hash does not verify.
	echo "not what was signed" | openssl dgst -sha256 -binary > "$TMP/other"
	run openssl pkeyutl -verify -pubin -inkey "$TMP/pub01.pem" -in "$TMP/other" -sigfile "$TMP/again-sign.der"
	[ "$status" -ne 0 ] || { echo "$output"; return 1; }
}

@test "a C_SignInit deferred to the C_Sign after it: signatures verify, a second C_SignInit is refused, the token's errors still come back" {
	start_memory_token
	init_token
	deferred_sign
}

# deferred_crypt: the module's deferred C_EncryptInit and C_DecryptInit
# (p11_probe.py deferred-crypt) on the initialised token at
# CLOAK_PKCS11_SOCKET: AES-GCM in one round trip a call, each ciphertext
# also decrypted on a new session, where nothing is deferred; the cases
# that go to the token at once; the token's refusal after another process
# turned the key's usage off.
deferred_crypt() {
	run python3 "$PROBE" "$MODULE" deferred-crypt "$PIN"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	local k
	for k in 1 2 3; do
		output_has "gcm$k-encrypt-init 0x0" "gcm$k-encrypt 0x0" "gcm$k-decrypt-init 0x0" "gcm$k-decrypt 0x0" \
			"gcm$k-elsewhere 0x0" "gcm$k-round-trip 1" || return 1
	done
	# 0x90 CKR_OPERATION_ACTIVE, 0x68 CKR_KEY_FUNCTION_NOT_PERMITTED,
	# 0x40 CKR_ENCRYPTED_DATA_INVALID
	output_has "key 0x0" "gcm1-encrypt-requests ENCRYPT_INIT ENCRYPT" "gcm1-decrypt-requests DECRYPT_INIT DECRYPT" \
		"gcm2-encrypt-requests ENCRYPT_INIT_ENCRYPT" "gcm2-decrypt-requests DECRYPT_INIT_DECRYPT" \
		"gcm3-encrypt-requests ENCRYPT_INIT_ENCRYPT" "gcm3-decrypt-requests DECRYPT_INIT_DECRYPT" \
		"twice-init 0x0" "twice-init-again 0x90" "twice-encrypt 0x0" "twice-requests ENCRYPT_INIT_ENCRYPT" \
		"query 0x0" "query-requests ENCRYPT_INIT ENCRYPT" "query-encrypt-requests ENCRYPT" \
		"multi-update 0x0" "multi-final 0x0" "multi-same 1" \
		"multi-requests ENCRYPT_INIT ENCRYPT_UPDATE ENCRYPT_FINAL" \
		"iv16-init-requests ENCRYPT_INIT" "other-key-init 0x68" "other-key-requests ENCRYPT_INIT" \
		"cbc1-encrypt 0x0" "cbc1-requests ENCRYPT_INIT ENCRYPT" \
		"cbc2-encrypt 0x0" "cbc2-requests ENCRYPT_INIT_ENCRYPT" \
		"rsa1-encrypt 0x0" "rsa1-requests ENCRYPT_INIT ENCRYPT" \
		"rsa2-encrypt 0x0" "rsa2-requests ENCRYPT_INIT ENCRYPT" \
		"failed-decrypt 0x40" "failed-requests DECRYPT_INIT_DECRYPT" "after-failed-init-requests DECRYPT_INIT" \
		"set-attrs 0x0" "after-set-init-requests ENCRYPT_INIT" "destroy 0x0" \
		"deferred-destroy-encrypt 0x0" "deferred-destroy-encrypt-requests ENCRYPT_INIT_ENCRYPT" \
		"after-destroy-init-requests ENCRYPT_INIT" "login-again 0x0" "after-logout-init-requests ENCRYPT_INIT" \
		"usage-encrypt-deferred-init 0x0" "usage-encrypt-other-process set-usage 0x0" \
		"usage-encrypt-refused 0x68" "usage-encrypt-refused-requests ENCRYPT_INIT_ENCRYPT" \
		"usage-encrypt-init-again 0x68" "usage-encrypt-init-again-requests ENCRYPT_INIT" \
		"usage-decrypt-deferred-init 0x0" "usage-decrypt-other-process set-usage 0x0" \
		"usage-decrypt-refused 0x68" "usage-decrypt-refused-requests DECRYPT_INIT_DECRYPT" \
		"usage-decrypt-init-again 0x68" "usage-decrypt-init-again-requests DECRYPT_INIT"
}

@test "C_EncryptInit and C_DecryptInit deferred to the call after them: AES-GCM with a new IV each time in one round trip, the token's refusal still comes back, the other cases go at once" {
	start_memory_token
	init_token
	deferred_crypt
}

@test "the module's deferred C_SignInit, C_EncryptInit and C_DecryptInit on the token's handler as a host process (no VM)" {
	start_host_token
	init_token
	deferred_sign
	deferred_crypt
}

@test "p11tool lists the token and its objects and signs with a key made in the guest" {
	start_memory_token
	init_token
	keygen 01 prime256v1
	export GNUTLS_PIN=$PIN
	run timeout 120 p11tool --provider "$MODULE" --list-tokens
	[[ "$output" == *"Label: cloak-test"* ]] || { echo "$output"; return 1; }
	run timeout 120 p11tool --provider "$MODULE" --login --list-all "pkcs11:token=cloak-test"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ "$output" == *"Private key (EC/ECDSA-SECP256R1)"* ]] || { echo "$output"; return 1; }
	[[ "$output" == *"CKA_SENSITIVE"* ]] || { echo "$output"; return 1; }
	# Signs, then verifies against the token's public key.
	run timeout 120 p11tool --provider "$MODULE" --login --test-sign "pkcs11:token=cloak-test;id=%01"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ "$output" == *"Verifying against public key in the token... ok"* ]] || { echo "$output"; return 1; }
}

@test "openssl with libp11's pkcs11 engine: a certificate request and a file signed by a key in the token; openssl verifies both" {
	[ -f /usr/lib/x86_64-linux-gnu/engines-3/pkcs11.so ] ||
		{ echo "no pkcs11 engine: apt-get install libengine-pkcs11-openssl"; return 1; }
	start_memory_token
	init_token
	keygen 01 prime256v1
	local key="pkcs11:token=cloak-test;id=%01;type=private;pin-value=$PIN"
	export PKCS11_MODULE_PATH=$MODULE
	run timeout 120 openssl req -engine pkcs11 -keyform engine -key "$key" -new -subj /CN=cloak-test \
		-out "$TMP/req.pem"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	run openssl req -in "$TMP/req.pem" -verify -noout
	[[ "$output" == *"verify OK"* ]] || { echo "$output"; return 1; }
	# The request carries the token's public key.
	openssl req -in "$TMP/req.pem" -pubkey -noout > "$TMP/req-pub.pem"
	pubkey_pem 01
	cmp "$TMP/req-pub.pem" "$TMP/pub01.pem"
	echo "signed through the engine $RANDOM" > "$TMP/msg"
	timeout 120 openssl dgst -sha256 -engine pkcs11 -keyform engine -sign "$key" -out "$TMP/sig" "$TMP/msg"
	run openssl dgst -sha256 -verify "$TMP/pub01.pem" -signature "$TMP/sig" "$TMP/msg"
	[[ "$output" == *"Verified OK"* ]] || { echo "$output"; return 1; }
}

@test "P-384: a key pair made in the guest signs (ECDSA-SHA384), openssl verifies" {
	need_native_cpu "where a P-384 key generation or signature takes about 16 s"
	start_memory_token
	init_token
	run keygen 02 secp384r1
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	# pkcs11-tool 0.23 cannot export a P-384 public key (nor SoftHSM2's):
	# p11tool does.
	GNUTLS_PIN=$PIN timeout 120 p11tool --provider "$MODULE" --export-pubkey \
		"pkcs11:token=cloak-test;id=%02;type=public" --outfile "$TMP/pub02.pem"
	echo "signed in a cloak guest $RANDOM" > "$TMP/msg"
	run sign_verify 02 ECDSA-SHA384 sha384
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ "$output" == *"Verified OK"* ]] || { echo "$output"; return 1; }
}

# ed_sign_verify MODULE TOKEN-LABEL NAME: an Ed25519 key pair (id 05) made
# by pkcs11-tool on MODULE's token, a signature of $TMP/msg (CKM_EDDSA) in
# $TMP/NAME.sig, checked by openssl against the public key exported from
# the token ($TMP/NAME.pub: pkcs11-tool 0.23 writes it as PEM); the
# listing of the key pair in $TMP/NAME.gen.
ed_sign_verify() {
	local p="timeout 120 pkcs11-tool --module $1 --token-label $2 --login --pin $PIN"
	$p --keypairgen --key-type EC:edwards25519 --id 05 --label ed > "$TMP/$3.gen" 2>&1 || { cat "$TMP/$3.gen"; return 1; }
	$p --sign --id 05 -m EDDSA -i "$TMP/msg" -o "$TMP/$3.sig" || return 1
	[ "$(stat -c %s "$TMP/$3.sig")" -eq 64 ] || return 1
	$p --read-object --type pubkey --id 05 -o "$TMP/$3.pub" || return 1
	openssl pkeyutl -verify -pubin -inkey "$TMP/$3.pub" -rawin -in "$TMP/msg" -sigfile "$TMP/$3.sig"
}

@test "Ed25519: pkcs11-tool makes a key pair in the guest (EC:edwards25519) and signs (EDDSA); openssl verifies; the token verifies; CK_EDDSA_PARAMS pure only; as SoftHSM2 does it" {
	need_native_cpu "and Debian's libsodium does Ed25519 with SSE2 instructions KVM's emulator does not take"
	start_memory_token
	init_token
	echo "signed with Ed25519 in a cloak guest $RANDOM" > "$TMP/msg"
	run ed_sign_verify "$MODULE" cloak-test cloak
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ "$output" == *"Signature Verified Successfully"* ]] || { echo "$output"; return 1; }
	run grep -c 'Private Key Object; EC_EDWARDS\|Public Key Object; EC_EDWARDS' "$TMP/cloak.gen"
	[ "$output" -eq 2 ] || { cat "$TMP/cloak.gen"; return 1; }
	run grep 'Access:.*never extractable' "$TMP/cloak.gen"
	[ "$status" -eq 0 ] || { cat "$TMP/cloak.gen"; return 1; }
	run p11 --login --pin "$PIN" --verify --id 05 -m EDDSA -i "$TMP/msg" --signature-file "$TMP/cloak.sig"
	[[ "$output" == *"Signature is valid"* ]] || { echo "$output"; return 1; }
	# The controls: another message, for openssl and for the token.
	echo "not what was signed" > "$TMP/other"
	run openssl pkeyutl -verify -pubin -inkey "$TMP/cloak.pub" -rawin -in "$TMP/other" -sigfile "$TMP/cloak.sig"
	[ "$status" -ne 0 ] || { echo "$output"; return 1; }
	run p11 --login --pin "$PIN" --verify --id 05 -m EDDSA -i "$TMP/other" --signature-file "$TMP/cloak.sig"
	[[ "$output" == *"Invalid signature"* ]] || { echo "$output"; return 1; }
	# CK_EDDSA_PARAMS through the module: its pure form signs as no
	# parameter does (Ed25519 is deterministic), Ed25519ph and a context
	# are refused; no multi-part signing.
	run python3 "$PROBE" "$MODULE" eddsa "$PIN"
	output_has "found-private 1" "signature-len 64 same 1" "verify-pure 0x0" "ph-init 0x71" \
		"context-init 0x71" "short-init 0x71" "update 0x54"
	# The peer: SoftHSM2 through the same steps; its key pair listed as
	# the token's is (EC_POINT a DER OCTET STRING of 32 bytes, EC_PARAMS
	# as pkcs11-tool gave them).
	mkdir "$TMP/softhsm"
	printf 'directories.tokendir = %s\nobjectstore.backend = file\n' "$TMP/softhsm" > "$TMP/softhsm.conf"
	export SOFTHSM2_CONF=$TMP/softhsm.conf
	SOFTHSM=/usr/lib/softhsm/libsofthsm2.so
	pkcs11-tool --module "$SOFTHSM" --init-token --slot-index 0 --label peer --so-pin "$SO_PIN"
	pkcs11-tool --module "$SOFTHSM" --token-label peer --login --login-type so --so-pin "$SO_PIN" \
		--init-pin --new-pin "$PIN"
	run ed_sign_verify "$SOFTHSM" peer softhsm
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ "$output" == *"Signature Verified Successfully"* ]] || { echo "$output"; return 1; }
	for f in cloak softhsm; do
		sed -n 's/^  EC_POINT: *\(0420\)[0-9a-f]\{64\}$/EC_POINT \1+32/p; s/^  EC_PARAMS: */EC_PARAMS /p' \
			"$TMP/$f.gen" > "$TMP/$f.form"
	done
	run cat "$TMP/cloak.form"
	output_has "EC_POINT 0420+32" "EC_PARAMS 130c656477617264733235353139 (OID 2.21.100.119.97.114.100.115.50.53.53.49.57)"
	run diff "$TMP/cloak.form" "$TMP/softhsm.form"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
}

@test "hostile frames (zero, oversized, truncated, malformed) get an error or a hang-up; the token keeps serving" {
	start_memory_token
	run python3 "$PROBE" "$SOCK" hostile
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[ "$(grep -c 'then-ping 0$' <<< "$output")" -eq 12 ] || { echo "$output"; return 1; }
	for c in zero-length oversized just-over truncated bad-version unknown-op short-header garbage; do
		grep -q "^$c closed" <<< "$output" || { echo "$c was answered:"; echo "$output"; return 1; }
	done
	# Arguments cut short inside a well-formed frame: CKR_ARGUMENTS_BAD.
	grep -qx "cut-argument rv 0x7 then-ping 0" <<< "$output" || { echo "$output"; return 1; }
	grep -qx "bad-template rv 0x7 then-ping 0" <<< "$output" || { echo "$output"; return 1; }
	# Past the bounds the module keeps to (49 attributes, a value of 16 KiB + 1).
	grep -qx "template-49 rv 0x7 then-ping 0" <<< "$output" || { echo "$output"; return 1; }
	grep -qx "value-over-16k rv 0x7 then-ping 0" <<< "$output" || { echo "$output"; return 1; }
	grep -q "hung up on a client: bad frame length" "$TMP/monitor.out" || { cat "$TMP/monitor.out"; return 1; }
	grep -q "hung up on a client: malformed request" "$TMP/monitor.out" || { cat "$TMP/monitor.out"; return 1; }
	run p11 -L
	[[ "$output" == *"cloak guest token"* ]] || { echo "$output"; return 1; }
	kill -0 "$TOKEN_PID"
}

@test "a client idle on the connection its module keeps makes no other wait; its next call goes on a new connection" {
	start_memory_token
	init_token
	# 12 s idle: longer than the token's --idle (10 s), which a connection
	# kept past its reply would otherwise hold the token for.
	python3 "$PROBE" "$MODULE" idle 12 > "$TMP/idle.out" 2>&1 &
	local idler=$!
	for _ in $(seq 100); do
		grep -q '^before' "$TMP/idle.out" && break
		sleep 0.1
	done
	grep -qxF "before 0x0" "$TMP/idle.out" || { cat "$TMP/idle.out"; return 1; }
	run timeout 5 pkcs11-tool --module "$MODULE" -T
	[ "$status" -eq 0 ] || { echo "status $status: $output"; return 1; }
	[[ "$output" == *"cloak-test"* ]] || { echo "$output"; return 1; }
	wait "$idler"
	for line in "after 0x0" "slots 1"; do
		grep -qxF "$line" "$TMP/idle.out" || { echo "missing '$line' in:"; cat "$TMP/idle.out"; return 1; }
	done
}

@test "oversized attributes and templates, and objects until the token refuses one, get PKCS#11 errors through the module; the token keeps working" {
	start_memory_token
	init_token
	run timeout 300 python3 "$PROBE" "$MODULE" limits "$PIN"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	local want
	# CKR_ATTRIBUTE_VALUE_INVALID (0x13): a value over 16 KiB; CKR_DEVICE_MEMORY
	# (0x31): over an object's 20 KiB or 48 attributes (the template's
	# with the defaults); CKR_ARGUMENTS_BAD (0x7): over a frame's 64 KiB;
	# CKR_TEMPLATE_INCONSISTENT (0xd1): over a template's 48 attributes.
	for want in "value-over-16k 0x13" "object-over-20k 0x31" "frame-over-64k 0x7" \
		"template-over-48 0xd1" "object-over-48 0x31" "small 0x0" "set-value-over-16k 0x13" \
		"set-object-over-20k 0x31" "set-object-over-48 0x31" "label-after 0x0" "label-length 5" \
		"objects 64" "refused 0x31" "destroy-one 0x0" "create-again 0x0" "random 0x0" \
		"close 0x0" "reopen 0x0" "login-again 0x0" "create-after-close 0x0"; do
		grep -qx "$want" <<< "$output" || { echo "missing '$want' in:"; echo "$output"; return 1; }
	done
	run p11 -L
	[[ "$output" == *"cloak guest token"* ]] || { echo "$output"; return 1; }
	kill -0 "$TOKEN_PID"
	run grep -c 'hung up on a client' "$TMP/monitor.out"
	[ "$output" = 0 ] || { cat "$TMP/monitor.out"; return 1; }
}

@test "an imported key that signed is in no page the token shared (its --dump-shared at exit) nor the monitor's output, in any encoding; a planted copy is found" {
	start_memory_token --dump-shared="$TMP/shared.dump"
	init_token
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$TMP/key.pem" 2> /dev/null
	openssl pkey -in "$TMP/key.pem" -outform DER -out "$TMP/key.der"
	openssl pkey -in "$TMP/key.pem" -pubout -out "$TMP/pub01.pem"
	local scalar
	scalar=$(openssl pkey -in "$TMP/key.pem" -noout -text |
		awk '/^priv:/ { on = 1; next } /^pub:/ { on = 0 } on' | tr -d ' :\n')
	scalar=${scalar: -64}
	[[ $scalar =~ ^[0-9a-f]{64}$ ]] || { echo "no scalar: $scalar"; return 1; }
	p11 --login --pin "$PIN" --write-object "$TMP/key.der" --type privkey --id 01 > /dev/null
	echo "signed with an imported key $RANDOM" > "$TMP/msg"
	run sign_verify 01 ECDSA-SHA256 sha256
	[[ "$output" == *"Verified OK"* ]] || { echo "$output"; return 1; }
	# SIGTERM: the monitor writes the shared pages, then wipes and exits.
	kill -TERM "$TOKEN_PID"
	local st=0
	wait "$TOKEN_PID" || st=$?
	TOKEN_PID=
	[ "$st" -eq 240 ] || { echo "monitor exit $st"; cat "$TMP/monitor.out"; return 1; }
	# At least the bounce pool (32 pages) the frames passed through.
	[ "$(stat -c %s "$TMP/shared.dump")" -ge $((32 * 4096)) ]
	run python3 "$ROOT/tests/integration/keyscan.py" key "$scalar" "$TMP/shared.dump" "$TMP/monitor.out"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	# Control: the same scan finds the scalar planted in a copy of the dump.
	cp "$TMP/shared.dump" "$TMP/planted.dump"
	printf '%s' "$scalar" | xxd -r -p | dd of="$TMP/planted.dump" bs=1 seek=70000 conv=notrunc status=none
	run python3 "$ROOT/tests/integration/keyscan.py" key "$scalar" "$TMP/planted.dump"
	[ "$status" -eq 1 ] || { echo "$output"; return 1; }
}

@test "20 processes at once each log in and draw random bytes; a client killed mid-signature leaves the token serving" {
	start_memory_token
	init_token
	local i
	draw() { p11 --login --pin "$PIN" --generate-random 32 -o "$TMP/r$1"; }
	at_once 20 draw
	for i in $(seq 20); do
		[ "$(stat -c %s "$TMP/r$i")" -eq 32 ] || { echo "r$i"; return 1; }
	done
	# No two alike.
	[ "$(for i in $(seq 20); do od -An -tx1 "$TMP/r$i" | tr -d ' \n'; echo; done | sort -u | wc -l)" -eq 20 ]
	# A client killed while the guest signs for it (seconds under an
	# emulating KVM, a blink on hardware): the reply meets a closed socket.
	keygen 01 prime256v1
	echo "for a client that is gone" > "$TMP/msg"
	p11 --login --pin "$PIN" --sign --id 01 -m ECDSA-SHA256 -i "$TMP/msg" -o "$TMP/sig" > /dev/null 2>&1 &
	local victim=$!
	sleep 0.5
	kill -KILL "$victim" 2>/dev/null || true
	wait "$victim" 2>/dev/null || true
	p11 --login --pin "$PIN" --generate-random 16 -o "$TMP/after"
	[ "$(stat -c %s "$TMP/after")" -eq 16 ]
	kill -0 "$TOKEN_PID"
}

@test "cloak-pkcs11 start, init and stop; the module reads the socket the launcher printed" {
	need_kvm
	export TMPDIR=$TMP CLOAK # the suite's monitor (CLOAK_TEST_MEMORY's backend)
	run "$LAUNCHER" start -m
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	eval "$output"
	TOKEN_PID=$CLOAK_PKCS11_PID
	[ -S "$CLOAK_PKCS11_SOCKET" ]
	[ "$(stat -c %a "$(dirname "$CLOAK_PKCS11_SOCKET")")" = 700 ]
	run "$LAUNCHER" init -r --label launched < <(printf '%s\n%s\n' "$SO_PIN" "$PIN")
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	run p11 -T
	[[ "$output" == *"launched"* ]] || { echo "$output"; return 1; }
	run "$LAUNCHER" init -r -s "$TMP/x.img" --label again
	[ "$status" -eq 2 ] || { echo "$output"; return 1; }
	run "$LAUNCHER" stop
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	run ! kill -0 "$TOKEN_PID"
	TOKEN_PID=
	[ ! -e "$CLOAK_PKCS11_SOCKET" ]
	run "$LAUNCHER" stop
	[ "$status" -eq 1 ] || { echo "$output"; return 1; }
	[[ "$output" == *"not a cloak token"* ]] || { echo "$output"; return 1; }
}

@test "cloak-pkcs11 check: the user PIN from a file logs in and out; a wrong PIN, a final newline, no PIN file and no token each fail in one line" {
	start_memory_token
	init_token > /dev/null
	printf '%s' "$PIN" > "$TMP/pin"
	run "$LAUNCHER" check -p "$TMP/pin"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[ "$output" = "cloak-pkcs11: the token at $SOCK accepted the user PIN" ]
	printf '%s' 000000 > "$TMP/wrong"
	run "$LAUNCHER" check -p "$TMP/wrong"
	[ "$status" -eq 1 ] && [ "$(grep -c '' <<< "$output")" -eq 1 ] || { echo "$output"; return 1; }
	[[ "$output" == *"C_Login failed: 0xa0 (CKR_PIN_INCORRECT)"* ]] || { echo "$output"; return 1; }
	# libp11's pin-source=file: sends a final newline as part of the PIN:
	# refused here, before any login spends a try.
	printf '%s\n' "$PIN" > "$TMP/newline"
	run "$LAUNCHER" check -p "$TMP/newline"
	[ "$status" -eq 1 ] && [[ "$output" == *"ends with a newline"* ]] || { echo "$output"; return 1; }
	run "$LAUNCHER" check -p "$TMP/absent"
	[ "$status" -eq 1 ] && [[ "$output" == *"cannot read the PIN from $TMP/absent"* ]] || { echo "$output"; return 1; }
	# The right PIN still works.
	run "$LAUNCHER" check -p "$TMP/pin"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	kill "$TOKEN_PID"
	wait "$TOKEN_PID" 2>/dev/null || true
	TOKEN_PID=
	run timeout 60 "$LAUNCHER" check -p "$TMP/pin"
	[ "$status" -eq 1 ] && [ "$(grep -c '' <<< "$output")" -eq 1 ] || { echo "$output"; return 1; }
}

@test "cloak-pkcs11 check --main-pid: a monitor that ends before the token answers ends the check at once, saying nothing; without it the check waits" {
	# As systemd holds a unit's socket: it listens and never accepts, so a
	# client's connection waits in the queue (no guest: no KVM needed).
	local sock=$TMP/held.sock
	python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(8); time.sleep(120)' "$sock" &
	local holder=$!
	local i
	for ((i = 0; i < 50; i++)); do [ -S "$sock" ] && break; sleep 0.1; done
	printf '%s' "$PIN" > "$TMP/pin"
	# Without --main-pid it waits on the queue (here for 5 s of timeout).
	CLOAK_PKCS11_SOCKET=$sock run timeout 5 "$LAUNCHER" check -p "$TMP/pin"
	[ "$status" -eq 124 ] || { echo "status $status: $output"; kill "$holder"; return 1; }
	# A stand-in monitor that ends after 1 s: the check follows it.
	sleep 1 &
	local main=$!
	SECONDS=0
	CLOAK_PKCS11_SOCKET=$sock run timeout 15 "$LAUNCHER" check -p "$TMP/pin" --main-pid "$main"
	local took=$SECONDS
	kill "$holder"
	[ "$status" -eq 1 ] && [ -z "$output" ] || { echo "status $status: $output"; return 1; }
	[ "$took" -le 10 ] || { echo "took $took s"; return 1; }
	run "$LAUNCHER" check -p "$TMP/pin" --main-pid 'x1'
	[ "$status" -eq 1 ] && [ "$output" = "cloak-pkcs11: --main-pid takes a process id, not 'x1'" ] || { echo "$output"; return 1; }
}

@test "without CLOAK_PKCS11_SOCKET the module reaches the user's own token at \$XDG_RUNTIME_DIR/cloak-pkcs11/token.sock (the systemd user socket)" {
	need_kvm
	local run=$TMP/run
	mkdir -p "$run/cloak-pkcs11"
	chmod 700 "$run"
	(umask 077; exec "$CLOAK" --timeout=900 --channel p11=listen:"$run/cloak-pkcs11/token.sock" "$P11_ELF") \
		> "$TMP/monitor.out" 2>&1 &
	TOKEN_PID=$!
	wait_for_line "$TOKEN_PID" "$TMP/monitor.out" '^pkcs11: ready'
	export CLOAK_PKCS11_SOCKET=$run/cloak-pkcs11/token.sock
	init_token > /dev/null
	unset CLOAK_PKCS11_SOCKET
	run env XDG_RUNTIME_DIR="$run" timeout 120 pkcs11-tool --module "$MODULE" -T
	[[ "$output" == *"cloak-test"* ]] || { echo "$output"; return 1; }
	# The control: another runtime directory, no token.
	mkdir -p "$TMP/other"
	run env XDG_RUNTIME_DIR="$TMP/other" timeout 120 pkcs11-tool --module "$MODULE" -T
	[[ "$output" != *"cloak-test"* ]] || { echo "$output"; return 1; }
}

@test "make install: the launcher, guest and module work from PREFIX, and p11-kit finds the module through its .module file" {
	need_kvm
	local prefix=$TMP/prefix home=$TMP/home
	make -s -C "$ROOT" O="$O" install PREFIX="$prefix" > /dev/null
	for f in bin/cloak-pkcs11 lib/cloak/pkcs11.elf lib/pkcs11/libcloak-pkcs11.so \
		share/p11-kit/modules/cloak-pkcs11.module; do
		[ -f "$prefix/$f" ] || { echo "missing $f"; return 1; }
	done
	grep -qx "module: $prefix/lib/pkcs11/libcloak-pkcs11.so" "$prefix/share/p11-kit/modules/cloak-pkcs11.module"
	# p11-kit reads a user's modules (not root's: it ignores them for
	# root), so list them as nobody, with the file where a user puts it.
	mkdir -p "$home/.config/pkcs11/modules"
	cp "$prefix/share/p11-kit/modules/cloak-pkcs11.module" "$home/.config/pkcs11/modules/"
	chmod -R a+rX "$TMP"
	local as=()
	[ "$(id -u)" = 0 ] && as=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
	run timeout 60 "${as[@]}" env HOME="$home" p11-kit list-modules
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ "$output" == *"cloak-pkcs11: $prefix/lib/pkcs11/libcloak-pkcs11.so"* ]] || { echo "$output"; return 1; }
	[[ "$output" == *"library-description: cloak guest token"* ]] || { echo "$output"; return 1; }
	# The installed launcher finds the installed monitor, guest and module.
	export TMPDIR=$TMP
	run env CLOAK="$CLOAK" "$prefix/bin/cloak-pkcs11" start -m
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	eval "$output"
	TOKEN_PID=$CLOAK_PKCS11_PID
	run "$prefix/bin/cloak-pkcs11" init -r --label installed < <(printf '%s\n%s\n' "$SO_PIN" "$PIN")
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	run timeout 60 pkcs11-tool --module "$prefix/lib/pkcs11/libcloak-pkcs11.so" -T
	[[ "$output" == *"installed"* ]] || { echo "$output"; return 1; }
}

# rsa_sign ID MECH [PSS-OPTIONS...]: signs $TMP/in with pkcs11-tool into
# $TMP/sig.
rsa_sign() {
	local id=$1 mech=$2
	shift 2
	p11 --login --pin "$PIN" --sign --id "$id" -m "$mech" "$@" -i "$TMP/in" -o "$TMP/sig"
}

@test "RSA-2048: a key pair made in the guest signs (RSA-PKCS, SHA256-RSA-PKCS, both PSS) and decrypts (OAEP, PKCS#1 v1.5) for openssl; its private parts are CKR_ATTRIBUTE_SENSITIVE" {
	need_native_cpu "where an RSA key generation (many candidate primes) takes far longer than P-384's 16 s"
	start_memory_token
	init_token
	run p11 --login --pin "$PIN" --keypairgen --key-type rsa:2048 --id 03 --label key03 --usage-sign \
		--usage-decrypt
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ "$output" == *"never extractable"* ]] || { echo "$output"; return 1; }
	p11 --read-object --type pubkey --id 03 -o "$TMP/pub03.der"
	openssl pkey -pubin -inform DER -in "$TMP/pub03.der" -out "$TMP/pub03.pem" ||
		openssl rsa -RSAPublicKey_in -inform DER -in "$TMP/pub03.der" -pubout -out "$TMP/pub03.pem"
	run openssl pkey -pubin -in "$TMP/pub03.pem" -text -noout
	[[ "$output" == *"2048 bit"* ]] || { echo "$output"; return 1; }
	echo "signed in a cloak guest $RANDOM" > "$TMP/msg"
	openssl dgst -sha256 -binary "$TMP/msg" > "$TMP/hash"
	# SHA256-RSA-PKCS: the token hashes.
	cp "$TMP/msg" "$TMP/in"
	run rsa_sign 03 SHA256-RSA-PKCS
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	run openssl dgst -sha256 -verify "$TMP/pub03.pem" -signature "$TMP/sig" "$TMP/msg"
	[[ "$output" == *"Verified OK"* ]] || { echo "$output"; return 1; }
	# RSA-PKCS: the caller's DigestInfo (SHA-256's prefix, RFC 8017 9.2).
	{ printf '\x30\x31\x30\x0d\x06\x09\x60\x86\x48\x01\x65\x03\x04\x02\x01\x05\x00\x04\x20'
	  cat "$TMP/hash"; } > "$TMP/in"
	run rsa_sign 03 RSA-PKCS
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	run openssl pkeyutl -verify -pubin -inkey "$TMP/pub03.pem" -pkeyopt digest:sha256 -in "$TMP/hash" \
		-sigfile "$TMP/sig"
	[[ "$output" == *"Signature Verified Successfully"* ]] || { echo "$output"; return 1; }
	# SHA256-RSA-PKCS-PSS and RSA-PKCS-PSS (of the caller's hash), salt 32.
	cp "$TMP/msg" "$TMP/in"
	run rsa_sign 03 SHA256-RSA-PKCS-PSS --mgf MGF1-SHA256 --salt-len 32
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	local pss=(-pkeyopt digest:sha256 -pkeyopt rsa_padding_mode:pss -pkeyopt rsa_pss_saltlen:32)
	run openssl pkeyutl -verify -pubin -inkey "$TMP/pub03.pem" "${pss[@]}" -in "$TMP/hash" -sigfile "$TMP/sig"
	[[ "$output" == *"Signature Verified Successfully"* ]] || { echo "$output"; return 1; }
	cp "$TMP/hash" "$TMP/in"
	run rsa_sign 03 RSA-PKCS-PSS --hash-algorithm SHA256 --mgf MGF1-SHA256 --salt-len 32
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	run openssl pkeyutl -verify -pubin -inkey "$TMP/pub03.pem" "${pss[@]}" -in "$TMP/hash" -sigfile "$TMP/sig"
	[[ "$output" == *"Signature Verified Successfully"* ]] || { echo "$output"; return 1; }
	# The positive control: another message's hash does not verify.
	echo "not what was signed" | openssl dgst -sha256 -binary > "$TMP/other"
	run openssl pkeyutl -verify -pubin -inkey "$TMP/pub03.pem" "${pss[@]}" -in "$TMP/other" -sigfile "$TMP/sig"
	[ "$status" -ne 0 ] || { echo "$output"; return 1; }
	# A salt longer than a 2048-bit key allows is refused.
	run rsa_sign 03 SHA256-RSA-PKCS-PSS --mgf MGF1-SHA256 --salt-len 223
	[ "$status" -ne 0 ] || { echo "$output"; return 1; }
	[[ "$output" == *CKR_MECHANISM_PARAM_INVALID* ]] || { echo "$output"; return 1; }
	# OAEP (SHA-256, MGF1-SHA256): what openssl encrypted to the exported
	# key, the token decrypts; PKCS#1 v1.5 too.
	echo "a session key $RANDOM" > "$TMP/secret"
	openssl pkeyutl -encrypt -pubin -inkey "$TMP/pub03.pem" -pkeyopt rsa_padding_mode:oaep \
		-pkeyopt rsa_oaep_md:sha256 -pkeyopt rsa_mgf1_md:sha256 -in "$TMP/secret" -out "$TMP/ct"
	run p11 --login --pin "$PIN" --decrypt --id 03 -m RSA-PKCS-OAEP --hash-algorithm SHA256 \
		--mgf MGF1-SHA256 -i "$TMP/ct" -o "$TMP/pt"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	cmp "$TMP/secret" "$TMP/pt"
	openssl pkeyutl -encrypt -pubin -inkey "$TMP/pub03.pem" -in "$TMP/secret" -out "$TMP/ct15"
	run p11 --login --pin "$PIN" --decrypt --id 03 -m RSA-PKCS -i "$TMP/ct15" -o "$TMP/pt15"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	cmp "$TMP/secret" "$TMP/pt15"
	# The control: OAEP with SHA-1 does not decrypt what was made with SHA-256.
	run p11 --login --pin "$PIN" --decrypt --id 03 -m RSA-PKCS-OAEP --hash-algorithm SHA-1 \
		--mgf MGF1-SHA1 -i "$TMP/ct" -o "$TMP/pt1"
	[ "$status" -ne 0 ] || { echo "$output"; return 1; }
	# Of the private key, only the modulus and public exponent can be read.
	run python3 "$PROBE" "$MODULE" rsa-private "$PIN"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	output_has "login 0x0" "rsa-private-keys 1" "modulus 0x0" "modulus-len 0x100" \
		"public-exponent 0x0" "public-exponent-len 0x3" "private-exponent 0x11" "prime-1 0x11" \
		"prime-2 0x11" "exponent-1 0x11" "exponent-2 0x11" "coefficient 0x11" \
		"private-exponent-len 0xffffffffffffffff" "coefficient-len 0xffffffffffffffff"
}

#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The token's standard functions (docs/pkcs11.md) through programs nobody
# here wrote, each run on the cloak token and on SoftHSM2 (Debian's
# libsofthsm2.so, its own SOFTHSM2_CONF in $TMP) in the same test, with
# the results compared: opensc's pkcs11-tool (mechanism lists, AES, digests,
# HMAC, ECDH, key wrap, its self-tests), PyKCS11 with NIST's and the RFCs'
# known answers (p11_vectors.py), OpenSSL through libp11's engine, and
# GnuTLS's p11tool. Where the two tokens answer differently the test says
# which and why ("Beside SoftHSM2" in docs/pkcs11.md). Every program runs
# on loopback only (a Unix socket, SoftHSM2's files) under a timeout.
bats_require_minimum_version 1.5.0
load helpers
load "$ROOT/services/pkcs11/testing/pkcs11_helpers"

ENGINE=/usr/lib/x86_64-linux-gnu/engines-3/pkcs11.so
VECTORS=$ROOT/services/pkcs11/testing/p11_vectors.py
# Debian's python3-pykcs11 installs for Debian's own python3, which a
# python3 earlier on PATH may not be.
PY=/usr/bin/python3
IV=000102030405060708090a0b0c0d0e0f

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

# module_of NAME: the module that serves the token NAME.
module_of() {
	case $1 in
	cloak) echo "$MODULE" ;;
	softhsm) echo "$SOFTHSM" ;;
	esac
}

# label_of NAME: the token NAME's label.
label_of() {
	case $1 in
	cloak) echo cloak-test ;;
	softhsm) echo peer ;;
	esac
}

# doc_mechanisms: the mechanisms docs/pkcs11.md's "Mechanisms" table names,
# one a line, as pkcs11-tool 0.23 prints them (it has no names for the two
# RFC 5649 numbers, and calls CKM_EC_KEY_PAIR_GEN ECDSA-KEY-PAIR-GEN).
doc_mechanisms() {
	sed -n '/^### Mechanisms/,/^### /{/^| `CKM_/p}' "$ROOT/docs/pkcs11.md" |
		cut -d'|' -f2 | grep -o 'CKM_[A-Z0-9_]*' |
		sed 's/^CKM_//; s/_/-/g; s/^EC-KEY-PAIR-GEN$/ECDSA-KEY-PAIR-GEN/;
			s/^AES-KEY-WRAP-PAD$/mechtype-0x210A/; s/^AES-KEY-WRAP-KWP$/mechtype-0x210B/' | sort
}

# listed NAME: the mechanisms token NAME lists (pkcs11-tool -M), one a line.
listed() {
	on "$1" -M 2> /dev/null | sed -n 's/^  \([^ ,]*\).*/\1/p' | sort
}

@test "pkcs11-tool -M: the token lists the 37 mechanisms docs/pkcs11.md names; SoftHSM2 lists all but ECDSA-SHA256, ECDSA-SHA384, ECDH1-COFACTOR-DERIVE and CKM_AES_KEY_WRAP_KWP" {
	start_with_peer
	doc_mechanisms > "$TMP/doc"
	[ "$(wc -l < "$TMP/doc")" -eq 37 ] || { cat "$TMP/doc"; return 1; }
	listed cloak > "$TMP/list.cloak"
	listed softhsm > "$TMP/list.softhsm"
	run diff "$TMP/doc" "$TMP/list.cloak"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	# What the token lists that SoftHSM2 2.6.1 does not: ECDSA that hashes
	# (SoftHSM2 has raw ECDSA only), the cofactor ECDH (the same on these
	# curves) and PKCS#11 3.0's number for RFC 5649.
	run comm -23 "$TMP/list.cloak" "$TMP/list.softhsm"
	[ "$output" = "$(printf '%s\n' ECDH1-COFACTOR-DERIVE ECDSA-SHA256 ECDSA-SHA384 mechtype-0x210B)" ] ||
		{ echo "$output"; return 1; }
	# And SoftHSM2 signs no message with ECDSA-SHA256: the caller hashes.
	echo "a message" > "$TMP/msg"
	on softhsm --keypairgen --key-type EC:prime256v1 --id 01 > /dev/null 2>&1
	run on softhsm --sign --id 01 -m ECDSA-SHA256 -i "$TMP/msg" -o "$TMP/sig"
	[ "$status" -ne 0 ] || { echo "$output"; return 1; }
	[[ "$output" == *CKR_MECHANISM_INVALID* ]] || { echo "$output"; return 1; }
}

# aes_both: on both tokens, pkcs11-tool makes an AES-256 key (id 10) that
# round-trips $TMP/msg with AES-CBC-PAD, and imports $TMP/k32 (id 11),
# whose AES-CBC-PAD, AES-CBC and AES-ECB ciphertexts go to
# $TMP/NAME.MECH.
aes_both() {
	local t m
	for t in cloak softhsm; do
		on $t --keygen --key-type AES:32 --id 10 --label aes > "$TMP/$t.gen" 2>&1 || { cat "$TMP/$t.gen"; return 1; }
		grep -q 'Secret Key Object; AES length 32' "$TMP/$t.gen" || { cat "$TMP/$t.gen"; return 1; }
		on $t --encrypt --id 10 -m AES-CBC-PAD --iv "$IV" -i "$TMP/msg" -o "$TMP/$t.gen.ct" 2> /dev/null || return 1
		on $t --decrypt --id 10 -m AES-CBC-PAD --iv "$IV" -i "$TMP/$t.gen.ct" -o "$TMP/$t.gen.pt" 2> /dev/null || return 1
		cmp "$TMP/msg" "$TMP/$t.gen.pt" || return 1
		on $t --write-object "$TMP/k32" --type secrkey --key-type AES:32 --id 11 --label known > /dev/null 2>&1 || return 1
		for m in AES-CBC-PAD AES-CBC AES-ECB; do
			local iv=(--iv "$IV")
			[ $m = AES-ECB ] && iv=()
			on $t --encrypt --id 11 -m $m "${iv[@]}" -i "$TMP/msg" -o "$TMP/$t.$m" 2> /dev/null || return 1
			on $t --decrypt --id 11 -m $m "${iv[@]}" -i "$TMP/$t.$m" -o "$TMP/$t.$m.pt" 2> /dev/null || return 1
			cmp "$TMP/msg" "$TMP/$t.$m.pt" || return 1
		done
	done
}

@test "pkcs11-tool AES: --keygen AES:32, --encrypt/--decrypt with AES-CBC-PAD, AES-CBC and AES-ECB; one imported key gives openssl enc's bytes on both tokens; each decrypts the other's" {
	start_with_peer
	head -c 32 /dev/urandom > "$TMP/k32"
	head -c 4096 /dev/urandom > "$TMP/msg" # whole blocks, for CBC and ECB
	run aes_both
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	local k
	k=$(od -An -tx1 -v "$TMP/k32" | tr -d ' \n')
	openssl enc -aes-256-cbc -K "$k" -iv "$IV" -in "$TMP/msg" -out "$TMP/openssl.AES-CBC-PAD"
	openssl enc -aes-256-cbc -nopad -K "$k" -iv "$IV" -in "$TMP/msg" -out "$TMP/openssl.AES-CBC"
	openssl enc -aes-256-ecb -nopad -K "$k" -in "$TMP/msg" -out "$TMP/openssl.AES-ECB"
	for m in AES-CBC-PAD AES-CBC AES-ECB; do
		cmp "$TMP/openssl.$m" "$TMP/cloak.$m"
		cmp "$TMP/openssl.$m" "$TMP/softhsm.$m"
	done
	# Each token's own key's ciphertext decrypts on that token only, and the
	# control: a ciphertext of another key does not give the message.
	on cloak --decrypt --id 11 -m AES-CBC-PAD --iv "$IV" -i "$TMP/softhsm.AES-CBC-PAD" -o "$TMP/x" 2> /dev/null
	cmp "$TMP/msg" "$TMP/x"
	run on cloak --decrypt --id 10 -m AES-CBC-PAD --iv "$IV" -i "$TMP/softhsm.gen.ct" -o "$TMP/y"
	run ! cmp -s "$TMP/msg" "$TMP/y"
	# The key pkcs11-tool makes: the same usage but wrapping on both
	# (SoftHSM2 sets CKA_WRAP and CKA_UNWRAP true on a secret key by
	# default, the token false).
	run grep -h 'Usage:' "$TMP/cloak.gen" "$TMP/softhsm.gen"
	[ "$output" = "$(printf '  Usage:      %s\n' 'encrypt, decrypt, verify' 'encrypt, decrypt, verify, wrap, unwrap')" ] ||
		{ echo "$output"; return 1; }
	# pkcs11-tool 0.23 takes no GCM (nor CTR) parameters, on either token:
	# PyKCS11 runs them (the known-answer test below).
	for t in cloak softhsm; do
		run on $t --encrypt --id 11 -m AES-GCM --iv "$IV" -i "$TMP/msg" -o "$TMP/gcm"
		[ "$status" -ne 0 ] || { echo "$output"; return 1; }
		[[ "$output" == *"Mechanism AES-GCM illegal or not supported"* ]] || { echo "$output"; return 1; }
	done
}

@test "pkcs11-tool --hash: SHA-1, SHA256, SHA384, SHA512 are sha*sum's on both tokens" {
	start_with_peer
	head -c 100000 /dev/urandom > "$TMP/msg"
	local t m sum
	for t in cloak softhsm; do
		for m in SHA-1:sha1sum SHA256:sha256sum SHA384:sha384sum SHA512:sha512sum; do
			on $t --hash -m "${m%%:*}" -i "$TMP/msg" -o "$TMP/h" 2> /dev/null
			sum=$(${m#*:} < "$TMP/msg")
			[ "$(od -An -tx1 -v "$TMP/h" | tr -d ' \n')" = "${sum%% *}" ] || { echo "$t $m"; return 1; }
		done
	done
}

@test "pkcs11-tool HMAC: --keygen GENERIC:32, SHA256-HMAC --sign and --verify on both tokens; a changed message is invalid" {
	start_with_peer
	echo "authenticated $RANDOM" > "$TMP/msg"
	echo "not what was authenticated" > "$TMP/other"
	local t
	for t in cloak softhsm; do
		run on $t --keygen --key-type GENERIC:32 --id 20 --label hmac
		[[ "$output" == *"Secret Key Object; Generic secret length 32"* ]] || { echo "$output"; return 1; }
		on $t --sign --id 20 -m SHA256-HMAC -i "$TMP/msg" -o "$TMP/$t.mac" 2> /dev/null
		[ "$(stat -c %s "$TMP/$t.mac")" -eq 32 ]
		run on $t --verify --id 20 -m SHA256-HMAC -i "$TMP/msg" --signature-file "$TMP/$t.mac"
		[[ "$output" == *"Signature is valid"* ]] || { echo "$t: $output"; return 1; }
		run on $t --verify --id 20 -m SHA256-HMAC -i "$TMP/other" --signature-file "$TMP/$t.mac"
		[[ "$output" == *"Invalid signature"* ]] || { echo "$t: $output"; return 1; }
	done
	# Two keys from two tokens' generators: not the same MAC.
	run ! cmp -s "$TMP/cloak.mac" "$TMP/softhsm.mac"
}

@test "ECDH1-DERIVE: a P-256 key on each token and one of openssl's; every pair derives the same secret; pkcs11-tool's --derive works on SoftHSM2 and is refused by the token (a key both decrypting and unwrapping)" {
	start_with_peer
	local t
	for t in cloak softhsm; do
		on $t --keypairgen --key-type EC:prime256v1 --id 30 --label ecdh --usage-derive > /dev/null 2>&1
		on $t --read-object --type pubkey --id 30 -o "$TMP/$t.pub.der" 2> /dev/null
	done
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$TMP/ossl.pem" 2> /dev/null
	openssl pkey -in "$TMP/ossl.pem" -pubout -outform DER -out "$TMP/ossl.pub.der"
	# pkcs11-tool 0.23 asks for the derived key with CKA_DECRYPT and
	# CKA_UNWRAP both true, which the token never makes ("No key both
	# decrypts and unwraps"); SoftHSM2 derives.
	run on cloak --derive --id 30 -m ECDH1-DERIVE -i "$TMP/ossl.pub.der" -o "$TMP/x"
	[ "$status" -ne 0 ] || { echo "$output"; return 1; }
	[[ "$output" == *CKR_TEMPLATE_INCONSISTENT* ]] || { echo "$output"; return 1; }
	on softhsm --derive --id 30 -m ECDH1-DERIVE -i "$TMP/ossl.pub.der" -o "$TMP/softhsm-ossl" 2> /dev/null
	on softhsm --derive --id 30 -m ECDH1-DERIVE -i "$TMP/cloak.pub.der" -o "$TMP/softhsm-cloak" 2> /dev/null
	# The token derives through PyKCS11, with a template that asks for no
	# unwrapping.
	run timeout 120 "$PY" "$VECTORS" "$MODULE" "$PIN" derive 30 "$TMP/ossl.pub.der" "$TMP/cloak-ossl"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	run timeout 120 "$PY" "$VECTORS" "$MODULE" "$PIN" derive 30 "$TMP/softhsm.pub.der" "$TMP/cloak-softhsm"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	# Both tokens' pairs through PyKCS11 on SoftHSM2 too.
	run timeout 120 "$PY" "$VECTORS" "$SOFTHSM" "$PIN" derive 30 "$TMP/ossl.pub.der" "$TMP/softhsm-ossl.py"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	for t in cloak softhsm; do
		openssl pkey -pubin -inform DER -in "$TMP/$t.pub.der" -out "$TMP/$t.pub.pem"
		openssl pkeyutl -derive -inkey "$TMP/ossl.pem" -peerkey "$TMP/$t.pub.pem" -out "$TMP/ossl-$t"
		[ "$(stat -c %s "$TMP/ossl-$t")" -eq 32 ]
	done
	cmp "$TMP/ossl-cloak" "$TMP/cloak-ossl"
	cmp "$TMP/ossl-softhsm" "$TMP/softhsm-ossl"
	cmp "$TMP/ossl-softhsm" "$TMP/softhsm-ossl.py"
	cmp "$TMP/cloak-softhsm" "$TMP/softhsm-cloak"
	# The control: different pairs, different secrets.
	run ! cmp -s "$TMP/cloak-ossl" "$TMP/softhsm-ossl"
}

@test "pkcs11-tool --wrap/--unwrap AES-KEY-WRAP: one KEK and key on both tokens give RFC 3394's bytes (openssl's); each unwraps the other's; the token's unwrapped key must be sensitive" {
	start_with_peer
	head -c 32 /dev/urandom > "$TMP/kek"
	head -c 16 /dev/urandom > "$TMP/key"
	local t kek key
	kek=$(od -An -tx1 -v "$TMP/kek" | tr -d ' \n')
	key=$(od -An -tx1 -v "$TMP/key" | tr -d ' \n')
	openssl enc -id-aes256-wrap -K "$kek" -iv a6a6a6a6a6a6a6a6 -in "$TMP/key" -out "$TMP/openssl.wrapped"
	printf '%s' "attack at dawn.." > "$TMP/block"
	openssl enc -aes-128-ecb -nopad -K "$key" -in "$TMP/block" -out "$TMP/block.ct"
	for t in cloak softhsm; do
		on $t --write-object "$TMP/kek" --type secrkey --key-type AES:32 --id 40 --label kek --usage-wrap \
			> /dev/null 2>&1 || return 1
		on $t --write-object "$TMP/key" --type secrkey --key-type AES:16 --id 41 --label key --extractable \
			> /dev/null 2>&1 || return 1
		run on $t --wrap --id 40 --application-id 41 -m AES-KEY-WRAP -o "$TMP/$t.wrapped"
		[ "$status" -eq 0 ] || { echo "$t: $output"; return 1; }
		cmp "$TMP/openssl.wrapped" "$TMP/$t.wrapped"
	done
	# pkcs11-tool's template for --unwrap asks for CKA_SENSITIVE false
	# unless given --sensitive: SoftHSM2 makes such a key, the token never
	# hands a key out unwrapped in the clear (CKR_ATTRIBUTE_VALUE_INVALID).
	run on cloak --unwrap --id 40 -m AES-KEY-WRAP -i "$TMP/softhsm.wrapped" --key-type AES: \
		--application-id 42 --application-label plain
	[ "$status" -ne 0 ] || { echo "$output"; return 1; }
	[[ "$output" == *CKR_ATTRIBUTE_VALUE_INVALID* ]] || { echo "$output"; return 1; }
	run on softhsm --unwrap --id 40 -m AES-KEY-WRAP -i "$TMP/cloak.wrapped" --key-type AES: \
		--application-id 42 --application-label plain
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	# With --sensitive, each unwraps the other's wrapping into the key that
	# encrypts as openssl does with the key's value.
	run on cloak --unwrap --id 40 -m AES-KEY-WRAP -i "$TMP/softhsm.wrapped" --key-type AES: \
		--application-id 43 --application-label unwrapped --sensitive
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	run on softhsm --unwrap --id 40 -m AES-KEY-WRAP -i "$TMP/cloak.wrapped" --key-type AES: \
		--application-id 43 --application-label unwrapped --sensitive
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	for t in cloak softhsm; do
		on $t --encrypt --id 43 -m AES-ECB -i "$TMP/block" -o "$TMP/$t.block.ct" 2> /dev/null
		cmp "$TMP/block.ct" "$TMP/$t.block.ct"
		# The control: a changed wrapping does not unwrap.
		{ printf '\x01'; tail -c +2 "$TMP/$t.wrapped"; } > "$TMP/changed"
		run on $t --unwrap --id 40 -m AES-KEY-WRAP -i "$TMP/changed" --key-type AES: --application-id 44 --sensitive
		[ "$status" -ne 0 ] || { echo "$t: $output"; return 1; }
	done
}

@test "pkcs11-tool --test --allow-sw with an RSA key: passes on the token, fails on SoftHSM2 (an OAEP label); --test-fork passes on the token and fails on SoftHSM2" {
	start_with_peer
	openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$TMP/rsa.pem" 2> /dev/null
	openssl pkey -in "$TMP/rsa.pem" -outform DER -out "$TMP/rsa.der"
	openssl pkey -in "$TMP/rsa.pem" -pubout -outform DER -out "$TMP/rsapub.der"
	local t
	for t in cloak softhsm; do
		on $t --write-object "$TMP/rsa.der" --type privkey --id 60 --label rsa --usage-decrypt --usage-sign \
			--sensitive > /dev/null 2>&1 || return 1
		on $t --write-object "$TMP/rsapub.der" --type pubkey --id 60 --label rsa --usage-decrypt --usage-sign \
			> /dev/null 2>&1 || return 1
	done
	run on cloak --test --allow-sw
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	# The token: no MD5, no seed taken from a caller, RSA-PKCS in one part
	# only; signatures, verification, and decryption with PKCS#1 v1.5 and
	# OAEP (a label, then none) pass.
	output_has "  seeding (C_SeedRandom) not supported" "  SHA256: OK" "    RSA-PKCS: OK" "    SHA256-RSA-PKCS: OK" \
		"warning: PKCS11 function C_SignUpdate failed: rv = CKR_FUNCTION_NOT_SUPPORTED (0x54)" "No errors"
	[ "$(grep -cx 'OK' <<< "$output")" -eq 2 ] || { echo "$output"; return 1; } # the two OAEP decryptions
	run ! grep -q 'MD5: OK' <<< "$output"
	# SoftHSM2 2.6.1: MD5 and RSA-X-509 besides, then C_DecryptInit of OAEP
	# with a label is CKR_ARGUMENTS_BAD (it takes no OAEP label) and
	# pkcs11-tool stops there.
	run on softhsm --test --allow-sw
	[ "$status" -ne 0 ] || { echo "$output"; return 1; }
	output_has "  MD5: OK" "    RSA-X-509: OK" "    RSA-PKCS: OK" \
		"error: PKCS11 function C_DecryptInit failed: rv = CKR_ARGUMENTS_BAD (0x7)"
	[[ "$output" == *"encoding parameter (Label) present"* ]] || { echo "$output"; return 1; }
	run ! grep -q 'No errors' <<< "$output"
	# C_Initialize in a forked child: the token's module starts afresh there
	# (docs/pkcs11.md); SoftHSM2 2.6.1 answers the child
	# CKR_CRYPTOKI_ALREADY_INITIALIZED.
	run on cloak --test-fork
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ "$output" == *"Calling C_Initialize in forked child process"* ]] || { echo "$output"; return 1; }
	run on softhsm --test-fork
	[ "$status" -ne 0 ] || { echo "$output"; return 1; }
	[[ "$output" == *"C_Initialize in child"*CKR_CRYPTOKI_ALREADY_INITIALIZED* ]] || { echo "$output"; return 1; }
}

@test "PyKCS11 known answers (SP 800-38A AES ECB/CBC/CTR, GCM test case 4, CMAC, RFC 3394 and 5649 key wrap, RFC 2202/4231 HMAC, FIPS 180 digests): the same on both tokens, and RFC 5649's own examples where the token lists CKM_AES_KEY_WRAP_KWP" {
	need_native_cpu "and GCM's GHASH in Debian's BearSSL has SSE2 instructions KVM's emulator does not take"
	start_with_peer
	local t
	for t in cloak softhsm; do
		timeout 120 "$PY" "$VECTORS" "$(module_of $t)" "$PIN" > "$TMP/$t.kat" 2>&1 || { cat "$TMP/$t.kat"; return 1; }
	done
	run cat "$TMP/cloak.kat"
	output_has "sp800-38a F.1.5 ECB-AES256 encrypt ok" "gcm test case 4 decrypt ok" \
		"sp800-38b D.1 CMAC-AES128 Mlen 64 ok" "rfc3394 4.6 unwrap ok" "rfc4231 6 SHA-512 ok" "SHA-256 abc in parts ok"
	[ "$(wc -l < "$TMP/cloak.kat")" -eq 44 ] || { cat "$TMP/cloak.kat"; return 1; }
	# SoftHSM2 2.6.1 passes every vector but lists no CKM_AES_KEY_WRAP_KWP
	# (0x210B), so it runs no RFC 5649 example of a length that is not a
	# whole semiblock: its 0x210A zero-pads such a key before wrapping.
	run diff "$TMP/softhsm.kat" "$TMP/cloak.kat"
	[ "$(grep -c '^>' <<< "$output")" -eq 6 ] || { echo "$output"; return 1; }
	[ "$(grep -c '^> rfc5649 6 (' <<< "$output")" -eq 6 ] || { echo "$output"; return 1; }
	[ "$(grep -c '^<' <<< "$output")" -eq 0 ] || { echo "$output"; return 1; }
}

@test "openssl through libp11's engine: pkeyutl -verify with the token's EC and RSA public keys; pkeyutl -encrypt to the token's RSA key (PKCS#1 v1.5, OAEP), decrypted in the token; the same on SoftHSM2" {
	[ -f "$ENGINE" ] || { echo "no pkcs11 engine: apt-get install libengine-pkcs11-openssl"; return 1; }
	start_with_peer
	# An RSA-2048 key made by openssl, imported (a key pair made in the
	# guest needs many candidate primes: pkcs11.bats makes one).
	openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$TMP/rsa.pem" 2> /dev/null
	openssl pkey -in "$TMP/rsa.pem" -outform DER -out "$TMP/rsa.der"
	openssl pkey -in "$TMP/rsa.pem" -pubout -outform DER -out "$TMP/rsapub.der"
	echo "signed and sealed $RANDOM" > "$TMP/msg"
	openssl dgst -sha256 -binary "$TMP/msg" > "$TMP/hash"
	echo "a session key $RANDOM" > "$TMP/secret"
	local t m uri e=(-engine pkcs11 -keyform engine)
	for t in cloak softhsm; do
		on $t --keypairgen --key-type EC:prime256v1 --id 50 --label ec > /dev/null 2>&1 || return 1
		on $t --write-object "$TMP/rsa.der" --type privkey --id 60 --label rsa --usage-decrypt --usage-sign \
			--sensitive > /dev/null 2>&1 || return 1
		on $t --write-object "$TMP/rsapub.der" --type pubkey --id 60 --label rsa --usage-decrypt --usage-sign \
			> /dev/null 2>&1 || return 1
		export PKCS11_MODULE_PATH
		PKCS11_MODULE_PATH=$(module_of $t)
		uri="pkcs11:token=$(label_of $t)"
		# ECDSA (raw, over the caller's hash: SoftHSM2 has no ECDSA-SHA256)
		# by pkcs11-tool, verified by openssl with the public key in the token.
		on $t --sign --id 50 -m ECDSA --signature-format openssl -i "$TMP/hash" -o "$TMP/$t.ecsig" 2> /dev/null
		run timeout 120 openssl pkeyutl "${e[@]}" -verify -pubin -inkey "$uri;id=%50;type=public" \
			-in "$TMP/hash" -sigfile "$TMP/$t.ecsig"
		[[ "$output" == *"Signature Verified Successfully"* ]] || { echo "$t: $output"; return 1; }
		# RSA: signed through the engine by the private key in the token,
		# verified through it by the public key.
		run timeout 120 openssl pkeyutl "${e[@]}" -sign -inkey "$uri;id=%60;type=private;pin-value=$PIN" \
			-pkeyopt digest:sha256 -in "$TMP/hash" -out "$TMP/$t.rsasig"
		[ "$status" -eq 0 ] || { echo "$t: $output"; return 1; }
		run timeout 120 openssl pkeyutl "${e[@]}" -verify -pubin -inkey "$uri;id=%60;type=public" \
			-pkeyopt digest:sha256 -in "$TMP/hash" -sigfile "$TMP/$t.rsasig"
		[[ "$output" == *"Signature Verified Successfully"* ]] || { echo "$t: $output"; return 1; }
		# The control: another hash does not verify.
		echo "not what was signed" | openssl dgst -sha256 -binary > "$TMP/other"
		run timeout 120 openssl pkeyutl "${e[@]}" -verify -pubin -inkey "$uri;id=%50;type=public" \
			-in "$TMP/other" -sigfile "$TMP/$t.ecsig"
		[ "$status" -ne 0 ] || { echo "$t: $output"; return 1; }
		# Encrypted by openssl to the token's public key, decrypted in the token.
		for m in pkcs1 oaep; do
			timeout 120 openssl pkeyutl "${e[@]}" -encrypt -pubin -inkey "$uri;id=%60;type=public" \
				-pkeyopt rsa_padding_mode:$m -in "$TMP/secret" -out "$TMP/$t.$m.ct" 2> /dev/null
			run timeout 120 openssl pkeyutl "${e[@]}" -decrypt -inkey "$uri;id=%60;type=private;pin-value=$PIN" \
				-pkeyopt rsa_padding_mode:$m -in "$TMP/$t.$m.ct" -out "$TMP/$t.$m.pt"
			[ "$status" -eq 0 ] || { echo "$t $m: $output"; return 1; }
			cmp "$TMP/secret" "$TMP/$t.$m.pt"
			# openssl's own key decrypts it too: the engine encrypted to the key.
			openssl pkeyutl -decrypt -inkey "$TMP/rsa.pem" -pkeyopt rsa_padding_mode:$m -in "$TMP/$t.$m.ct" |
				cmp - "$TMP/secret"
		done
	done
	# RSA PKCS#1 v1.5 signatures are deterministic: the same on both tokens.
	cmp "$TMP/cloak.rsasig" "$TMP/softhsm.rsasig"
}

@test "p11tool: --generate-privkey ECDSA, --export-pubkey and --test-sign on both tokens" {
	start_with_peer
	export GNUTLS_PIN=$PIN
	local t uri
	for t in cloak softhsm; do
		uri="pkcs11:token=$(label_of $t)"
		run timeout 120 p11tool --provider "$(module_of $t)" --login --generate-privkey ECDSA --curve secp256r1 \
			--label gt --outfile "$TMP/$t.gen.pem" "$uri"
		[ "$status" -eq 0 ] || { echo "$t: $output"; return 1; }
		run timeout 120 p11tool --provider "$(module_of $t)" --login --export-pubkey "$uri;object=gt;type=public" \
			--outfile "$TMP/$t.pub.pem"
		[ "$status" -eq 0 ] || { echo "$t: $output"; return 1; }
		run openssl pkey -pubin -in "$TMP/$t.pub.pem" -text -noout
		[[ "$output" == *"NIST CURVE: P-256"* ]] || { echo "$t: $output"; return 1; }
		# --generate-privkey prints the public key it made: the one exported.
		cmp <(openssl pkey -pubin -in "$TMP/$t.gen.pem") <(openssl pkey -pubin -in "$TMP/$t.pub.pem")
		run timeout 120 p11tool --provider "$(module_of $t)" --login --test-sign "$uri;object=gt"
		[ "$status" -eq 0 ] || { echo "$t: $output"; return 1; }
		output_has "Signing using ECDSA-SHA256... ok" "Verifying against private key parameters... ok" \
			"Verifying against public key in the token... ok"
	done
}

@test "the calls no stock tool makes (p11_probe.py functions): C_CopyObject, C_GetObjectSize, C_DigestKey alike on both tokens; C_SeedRandom and C_WaitForSlotEvent differ" {
	start_with_peer
	local t
	for t in cloak softhsm; do
		run timeout 120 python3 "$ROOT/services/pkcs11/testing/p11_probe.py" "$(module_of $t)" functions "$PIN"
		[ "$status" -eq 0 ] || { echo "$t: $output"; return 1; }
		echo "$output" > "$TMP/$t.functions"
		# 0x54 CKR_FUNCTION_NOT_SUPPORTED, 0x51 CKR_FUNCTION_NOT_PARALLEL
		output_has "login 0x0" "copy 0x0" "size 0x0" "digest-key 0x0" "digest-key-value 0x1" \
			"get-operation-state 0x54" "sign-recover-init 0x54" "verify-recover-init 0x54" \
			"digest-encrypt-update 0x54" "function-status 0x51"
	done
	# The token takes no seed from a caller (0x120
	# CKR_RANDOM_SEED_NOT_SUPPORTED) and has no slot events (0x54);
	# SoftHSM2 takes that seed and answers CKR_NO_EVENT (0x8).
	run diff "$TMP/cloak.functions" "$TMP/softhsm.functions"
	[ "$output" = "$(printf '%s\n' 10c10 '< seed-random 0x120' --- '> seed-random 0x0' 14c14 \
		'< wait-for-slot-event 0x54' --- '> wait-for-slot-event 0x8')" ] || { echo "$output"; return 1; }
}

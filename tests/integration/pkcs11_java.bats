#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Java programs on the token through the JDK's own PKCS#11 provider
# (SunPKCS11, OpenJDK 17 from Debian's default-jdk-headless): keytool with
# the token as its keystore, and a Java program (P11Java.java) that signs,
# verifies and encrypts through the provider. Each test runs the same on the
# cloak token and on SoftHSM2 (Debian's libsofthsm2.so, its own
# SOFTHSM2_CONF in $TMP) and compares; where the two answer differently
# the test says which and why ("Beside SoftHSM2" in docs/pkcs11.md). A
# JVM's start is the dear part where the CPU is emulated (the SVM tier), so
# the tests start few: three keytools and one P11Java per token.
bats_require_minimum_version 1.5.0
load helpers
load "$ROOT/services/pkcs11/testing/pkcs11_helpers"

JAVA_SRC=$ROOT/services/pkcs11/testing/P11Java.java
JAVA_CLASSES=$ROOT/$O/tests/java
# The JVM's flags for a short run: the interpreter only (no compiler
# threads) and one garbage collector thread. In the SVM tier (2026-12-06)
# P11Java took 10-11 s so, 14-18 s with the quick compiler only, 12-24 s
# with the JVM's defaults, and 32-61 s from its source.
JVM_FLAGS=(-Xint -XX:+UseSerialGC)

setup() {
	TMP=$(mktemp -d)
	TOKEN_PID=
	if ! command -v keytool > /dev/null || ! command -v java > /dev/null; then
		skip "no JDK (keytool, java): apt-get install default-jdk-headless"
	fi
}

teardown() {
	[ -n "$TOKEN_PID" ] && kill "$TOKEN_PID" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$TMP"
	true
}

# start_both: the cloak token (label cloak-test) and a SoftHSM2 token
# (label peer), each initialised with the same SO and user PINs, and a
# SunPKCS11 configuration for each, $TMP/NAME.cfg (the first slot with a
# token: the cloak token's one slot, SoftHSM2's initialised one).
start_both() {
	start_with_peer || return 1
	printf 'name = cloak\nlibrary = %s\nslotListIndex = 0\n' "$MODULE" > "$TMP/cloak.cfg"
	printf 'name = softhsm\nlibrary = %s\nslotListIndex = 0\n' "$SOFTHSM" > "$TMP/softhsm.cfg"
}

# kt NAME ARGS...: keytool with the token NAME as its keystore (SunPKCS11
# on $TMP/NAME.cfg, logged in with the user PIN). -providername makes
# keytool take its key pair generator from that provider too: without it
# keytool makes an RSA key in the JVM and imports it (C_CreateObject).
kt() {
	local name=$1
	shift
	timeout 600 keytool "${JVM_FLAGS[@]/#/-J}" "$@" -keystore NONE -storetype PKCS11 \
		-providerClass sun.security.pkcs11.SunPKCS11 -providerArg "$TMP/$name.cfg" \
		-providername "SunPKCS11-$name" -storepass "$PIN"
}

# private_key NAME ID: the lines of pkcs11-tool -O on token NAME (kept in
# $TMP/NAME.objects) for its private key of CKA_ID ID (hex), its label
# line left out.
private_key() {
	grep -A4 '^Private Key Object' "$TMP/$1.objects" | grep -B2 -A2 "^  ID: *$2\$" | grep -v 'label:'
}

@test "keytool through SunPKCS11: a key and certificate pkcs11-tool put on the token are listed; -genkeypair makes a P-256 key in the token and copies it to it (C_CopyObject); a new keytool -list and pkcs11-tool -O find it, on both tokens" {
	start_both
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$TMP/k.pem" \
		-subj /CN=cloak-java -days 30 -out "$TMP/c.pem" 2> /dev/null
	openssl pkey -in "$TMP/k.pem" -outform DER -out "$TMP/k.der"
	openssl x509 -in "$TMP/c.pem" -outform DER -out "$TMP/c.der"
	local t fp
	fp=$(openssl x509 -in "$TMP/c.pem" -noout -fingerprint -sha256 | cut -d= -f2)
	for t in cloak softhsm; do
		on $t --write-object "$TMP/k.der" --type privkey --id 01 --label imported --usage-sign \
			> /dev/null 2>&1 || return 1
		on $t --write-object "$TMP/c.der" --type cert --id 01 --label imported > /dev/null 2>&1 || return 1
		# A private key without a certificate is no keystore entry for
		# SunPKCS11 (the control: not listed).
		on $t --keypairgen --key-type EC:prime256v1 --id 02 --label bare > /dev/null 2>&1 || return 1
		# keytool -genkeypair: C_GenerateKeyPair of session objects, a
		# self-signed certificate signed by the new key, then C_CopyObject
		# of the private key with CKA_TOKEN true and the certificate's
		# C_CreateObject; the session objects end with the JVM. (RSA-2048
		# key pairs made in the token: P11Java below; one keytool less.)
		run kt $t -genkeypair -alias ec-gen -keyalg EC -groupname secp256r1 -sigalg SHA256withECDSA \
			-dname CN=ec-gen -validity 30
		[ "$status" -eq 0 ] || { echo "$t: $output"; return 1; }
		# A new JVM lists what the token kept: the imported pair and the
		# one keytool made.
		run kt $t -list
		[ "$status" -eq 0 ] || { echo "$t: $output"; return 1; }
		output_has "Keystore provider: SunPKCS11-$t" "Your keystore contains 2 entries" \
			"imported, PrivateKeyEntry, " "Certificate fingerprint (SHA-256): $fp" \
			"ec-gen, PrivateKeyEntry, " || { echo "$t"; return 1; }
		run ! grep -q bare <<< "$output"
		# pkcs11-tool -O in another process: keytool's key is a token
		# object made in the token (CKA_LOCAL), CKA_ID the alias's bytes,
		# with its certificate.
		on $t -O > "$TMP/$t.objects" 2>&1 || { cat "$TMP/$t.objects"; return 1; }
		[ "$(grep -cx "  ID: *65632d67656e" "$TMP/$t.objects")" -eq 2 ] || { cat "$TMP/$t.objects"; return 1; }
		grep -qx '  subject:    DN: CN=ec-gen' "$TMP/$t.objects" || { cat "$TMP/$t.objects"; return 1; }
	done
	# Where they differ: SunPKCS11 asks for neither CKA_SENSITIVE nor a
	# usage. The token makes every private key sensitive and a key usage
	# of sign only unless asked for more; SoftHSM2 keeps the key readable
	# (not sensitive) and gives it decrypt, sign and unwrap.
	run private_key cloak 65632d67656e
	output_has "Private Key Object; EC" "  Usage:      sign" \
		"  Access:     sensitive, always sensitive, never extractable, local"
	run private_key softhsm 65632d67656e
	output_has "Private Key Object; EC" "  Usage:      decrypt, sign, unwrap" "  Access:     never extractable, local"
}

# p11java NAME: P11Java on token NAME through SunPKCS11, its output in
# $TMP/NAME.java; from the class make built, else from its source (Java's
# single-file launcher compiles it in memory first).
p11java() {
	local prog=(-cp "$JAVA_CLASSES" P11Java)
	[ -f "$JAVA_CLASSES/P11Java.class" ] || prog=("$JAVA_SRC")
	timeout 900 java "${JVM_FLAGS[@]}" "${prog[@]}" "$TMP/$1.cfg" "$PIN" > "$TMP/$1.java" 2>&1
}

@test "a Java program through SunPKCS11 (P11Java.java): P-256 and RSA-2048 key pairs made in the token sign SHA256withECDSA, SHA256withRSA and RSASSA-PSS, verified in the token and by the JVM; an AES-256 key of the token round-trips AES/GCM and GCM test case 4 gives its known answer; the same on both tokens" {
	need_native_cpu "and GCM's GHASH in Debian's BearSSL has SSE2 instructions KVM's emulator does not take"
	start_both
	local t
	for t in cloak softhsm; do
		p11java $t || { echo "$t:"; cat "$TMP/$t.java"; return 1; }
		run cat "$TMP/$t.java"
		output_has "provider SunPKCS11-$t" "EC P-256 key pair ok" "RSA-2048 key pair ok" "AES-256 key ok"
		for s in SHA256withECDSA SHA256withRSA RSASSA-PSS; do
			output_has "$s sign ok" "$s verify on the token ok" "$s verify in the JVM ok" \
				"$s another message rejected ok" || { echo "$t"; return 1; }
		done
		output_has "AES/GCM encrypt ok" "AES/GCM decrypt round trip ok" "AES/GCM changed tag rejected ok" \
			"AES/GCM known answer (GCM test case 4) ok" || { echo "$t"; return 1; }
		[ "$(wc -l < "$TMP/$t.java")" -eq 20 ] || { echo "$t:"; cat "$TMP/$t.java"; return 1; }
	done
	# Line for line the same on both tokens but for the provider's name.
	run diff <(tail -n +2 "$TMP/cloak.java") <(tail -n +2 "$TMP/softhsm.java")
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
}

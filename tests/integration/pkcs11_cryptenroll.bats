#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# A LUKS2 volume unlocked with a key on the token, by systemd's own
# programs (Debian bookworm's systemd 252): systemd-cryptenroll
# --pkcs11-token-uri enrolls a LUKS2 image file, and systemd-cryptsetup
# attach opens it with nothing but the token and its PIN. systemd 252
# finds the key through an X.509 certificate on the token, encrypts a
# random key to the certificate's RSA key, keeps that in the LUKS2 header,
# and at attach asks the token to decrypt it (CKM_RSA_PKCS). The same
# enrollment runs on SoftHSM2 (Debian's libsofthsm2.so) in the same test,
# as the peer ("Beside SoftHSM2" in docs/pkcs11.md). Needs root,
# device-mapper's dm_crypt and loop devices: the SVM tier's token part
# runs it (its VM loads them, tests/svm/svm-lib.bash); elsewhere it SKIPs
# saying which is missing.
bats_require_minimum_version 1.5.0
load helpers
load "$ROOT/services/pkcs11/testing/pkcs11_helpers"

CRYPTSETUP=/lib/systemd/systemd-cryptsetup
# Where p11-kit reads the system's module files (Debian's p11-kit 0.24).
P11KIT_MODULES=/usr/share/p11-kit/modules

setup() {
	TMP=$(mktemp -d)
	TOKEN_PID=
	VOLUME=cloak-luks-$$
}

teardown() {
	[ -e "/dev/mapper/$VOLUME" ] && timeout 60 "$CRYPTSETUP" detach "$VOLUME" > /dev/null 2>&1
	[ -e "/dev/mapper/$VOLUME.ref" ] && cryptsetup close "$VOLUME.ref" 2> /dev/null
	[ -n "$TOKEN_PID" ] && kill "$TOKEN_PID" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$TMP"
	true
}

# need_dm: root, device-mapper with dm_crypt, loop devices and systemd's
# programs, else SKIP naming what is missing.
need_dm() {
	local c
	for c in systemd-cryptenroll cryptsetup unshare; do
		command -v "$c" > /dev/null || skip "$c not found (Debian's systemd-cryptsetup, cryptsetup-bin, util-linux)"
	done
	[ -x "$CRYPTSETUP" ] || skip "$CRYPTSETUP not found (Debian's systemd-cryptsetup)"
	[ "$(id -u)" = 0 ] || skip "attaching a LUKS volume needs root (device-mapper)"
	[ -d /sys/module/dm_crypt ] || modprobe dm_crypt 2> /dev/null ||
		skip "no dm_crypt in this kernel ($(uname -r)); the SVM tier's VM loads it"
	[ -c /dev/loop-control ] || modprobe loop 2> /dev/null ||
		skip "no loop devices in this kernel ($(uname -r)); the SVM tier's VM loads them"
	[ -c /dev/mapper/control ] || skip "no /dev/mapper/control"
	[ -d "$P11KIT_MODULES" ] || skip "no $P11KIT_MODULES (Debian's p11-kit-modules)"
}

# with_modules CMD...: CMD where p11-kit lists cloak's module and
# SoftHSM2's. systemd finds tokens only through p11-kit's registered
# modules, and p11-kit reads no user's module files for root; so CMD runs in
# a mount namespace of its own whose p11-kit module directory is
# $TMP/modules (the system's stays as it is).
with_modules() {
	unshare --mount --propagation private \
		sh -c 'mount --bind "$0" "$1" && shift && exec "$@"' "$TMP/modules" "$P11KIT_MODULES" "$@"
}

# start_both: the cloak token (label cloak-test) and a SoftHSM2 token
# (label peer), each initialised with the same PINs, and the module files
# that name them.
start_both() {
	start_with_peer || return 1
	mkdir "$TMP/modules"
	printf 'module: %s\n' "$MODULE" > "$TMP/modules/cloak-pkcs11.module"
	printf 'module: %s\n' "$SOFTHSM" > "$TMP/modules/softhsm2.module"
}

# label_of NAME: the token NAME's label.
label_of() {
	case $1 in
	cloak) echo cloak-test ;;
	softhsm) echo peer ;;
	esac
}

# rsa_with_cert NAME: an RSA-2048 key (made by openssl, imported sensitive,
# as a user moves a key in) with its public key and a self-signed X.509
# certificate for it, all id 01, on token NAME. The certificate is how
# systemd 252 finds the key.
rsa_with_cert() {
	[ -f "$TMP/rsa.pem" ] || {
		openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$TMP/rsa.pem" 2> /dev/null &&
			openssl pkey -in "$TMP/rsa.pem" -outform DER -out "$TMP/rsa.der" &&
			openssl pkey -in "$TMP/rsa.pem" -pubout -outform DER -out "$TMP/rsapub.der" &&
			openssl req -new -x509 -key "$TMP/rsa.pem" -subj /CN=luks -days 3650 -outform DER \
				-out "$TMP/cert.der" 2> /dev/null
	} || return 1
	on "$1" --write-object "$TMP/rsa.der" --type privkey --id 01 --label luks --usage-decrypt \
		--sensitive > /dev/null 2>&1 || return 1
	on "$1" --write-object "$TMP/rsapub.der" --type pubkey --id 01 --label luks --usage-decrypt \
		> /dev/null 2>&1 || return 1
	on "$1" --write-object "$TMP/cert.der" --type cert --id 01 --label luks > /dev/null 2>&1
}

# luks_image IMAGE: a 20 MiB LUKS2 image opened by $TMP/keyfile (PBKDF2 at
# 1000 iterations: the test is about the token, not the KDF), whose first
# MiB is $TMP/known, written through cryptsetup itself.
luks_image() {
	[ -f "$TMP/keyfile" ] || {
		(umask 077 && head -c 32 /dev/urandom > "$TMP/keyfile") && head -c 1M /dev/urandom > "$TMP/known"
	} || return 1
	truncate -s 20M "$1"
	timeout 120 cryptsetup luksFormat -q --type luks2 --pbkdf pbkdf2 --pbkdf-force-iterations 1000 \
		--key-file "$TMP/keyfile" "$1" || return 1
	timeout 120 cryptsetup open --key-file "$TMP/keyfile" "$1" "$VOLUME.ref" || return 1
	dd if="$TMP/known" of="/dev/mapper/$VOLUME.ref" bs=1M count=1 oflag=direct status=none
	timeout 60 cryptsetup close "$VOLUME.ref"
}

# enroll NAME IMAGE: systemd-cryptenroll enrolls token NAME's key into
# IMAGE (unlocked by the key file), the PIN in $PIN as its manual says.
enroll() {
	with_modules env PIN="$PIN" timeout 300 systemd-cryptenroll --unlock-key-file="$TMP/keyfile" \
		--pkcs11-token-uri="pkcs11:token=$(label_of "$1")" "$2"
}

# attach IMAGE [PIN]: systemd-cryptsetup attach with the key the LUKS2
# header names (pkcs11-uri=auto), never asking (headless), one try.
attach() {
	with_modules env PIN="${2:-$PIN}" timeout 300 "$CRYPTSETUP" attach "$VOLUME" "$1" - \
		pkcs11-uri=auto,headless=true,tries=1,token-timeout=10s
}

@test "systemd-cryptenroll and systemd-cryptsetup (systemd 252): an RSA key with its certificate on the token unlocks a LUKS2 image, as on SoftHSM2; a wrong PIN, or the key deleted, leaves it locked" {
	need_kvm
	need_dm
	start_both
	local t
	for t in cloak softhsm; do
		rsa_with_cert "$t"
		luks_image "$TMP/$t.img"
		run enroll "$t" "$TMP/$t.img"
		[ "$status" -eq 0 ] || { echo "$t: $output"; return 1; }
		[[ "$output" == *"New PKCS#11 token enrolled as key slot 1."* ]] || { echo "$t: $output"; return 1; }
		# The header keeps one systemd-pkcs11 token naming that token (systemd
		# 252 keeps the URI it was given, and at attach decrypts with the one
		# private key there).
		run cryptsetup luksDump --dump-json-metadata "$TMP/$t.img"
		[ "$(jq -r '[.tokens[] | select(.type == "systemd-pkcs11")] | length' <<< "$output")" = 1 ] ||
			{ echo "$t: $output"; return 1; }
		[ "$(jq -r '.tokens[] | .["pkcs11-uri"]' <<< "$output")" = "pkcs11:token=$(label_of "$t")" ] ||
			{ echo "$t: $output"; return 1; }
		# Opened with the token alone: the volume's first MiB is what was
		# written through the key file.
		run attach "$TMP/$t.img"
		[ "$status" -eq 0 ] || { echo "$t: $output"; return 1; }
		output_has "Successfully logged into security token '$(label_of "$t")'." \
			"Successfully decrypted key with security token." || return 1
		[ -b "/dev/mapper/$VOLUME" ] || { echo "$t: no /dev/mapper/$VOLUME: $output"; return 1; }
		run cmp -n 1048576 "$TMP/known" "/dev/mapper/$VOLUME"
		[ "$status" -eq 0 ] || { echo "$t: $output"; return 1; }
		run timeout 60 "$CRYPTSETUP" detach "$VOLUME"
		[ "$status" -eq 0 ] || { echo "$t: $output"; return 1; }
		[ ! -e "/dev/mapper/$VOLUME" ] || { echo "$t: still attached"; return 1; }
	done
	# The token's refusals: a wrong PIN, then the private key gone (the
	# certificate and public key stay) with the right one.
	run attach "$TMP/cloak.img" 000000
	[ "$status" -ne 0 ] || { echo "$output"; return 1; }
	output_has "PIN for token 'cloak-test' is incorrect, please try again." || return 1
	[ ! -e "/dev/mapper/$VOLUME" ] || { echo "attached with a wrong PIN: $output"; return 1; }
	on cloak --delete-object --type privkey --id 01 > /dev/null 2>&1
	run attach "$TMP/cloak.img"
	[ "$status" -ne 0 ] || { echo "$output"; return 1; }
	output_has "Failed to find selected private key suitable for decryption on token." || return 1
	[ ! -e "/dev/mapper/$VOLUME" ] || { echo "attached without the key: $output"; return 1; }
	# The control: the key file still opens it.
	timeout 120 cryptsetup open --test-passphrase --key-file "$TMP/keyfile" "$TMP/cloak.img"
}

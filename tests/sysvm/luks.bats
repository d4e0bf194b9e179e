#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# A LUKS2 volume unlocked with an EC key in a server's token, by Debian
# 13's systemd 257 (docs/pkcs11.md, "Unlocking a LUKS volume"): the
# administrator makes a token instance for it (cloak-pkcs11@disk, as
# server-setup.bats does for nginx's), a P-256 key that may derive in it,
# enrolls a LUKS2 image with systemd-cryptenroll --pkcs11-token-uri, and
# opens it with systemd-cryptsetup attach. With an EC key, systemd 257
# keeps an ephemeral public point in the LUKS2 header and at attach asks
# the token for CKM_ECDH1_DERIVE into a session secret that is not
# sensitive and extractable, whose CKA_VALUE it reads. The module is the
# one the packages register with p11-kit. As root, first boot.
bats_require_minimum_version 1.5.0
load helpers

DISK=disk
DISK_PIN=disk-pin-4711
DISK_SO_PIN=disk-so-pin-4711
DISK_SOCKET=$SYSTEM_SOCKETS/$DISK.sock
CRYPTSETUP=/usr/lib/systemd/systemd-cryptsetup
IMG=$STATE/luks.img
VOLUME=cloak-luks

teardown() {
	[ -e "/dev/mapper/$VOLUME" ] && timeout 60 "$CRYPTSETUP" detach "$VOLUME" >/dev/null 2>&1
	[ -e "/dev/mapper/$VOLUME.ref" ] && cryptsetup close "$VOLUME.ref" 2>/dev/null
	true
}

# p11_disk ARGS...: pkcs11-tool on the disk's token, through p11-kit's
# proxy module.
p11_disk() {
	CLOAK_PKCS11_SOCKET=$DISK_SOCKET timeout 300 pkcs11-tool --module "$P11_PROXY" --token-label "$DISK" "$@"
}

# attach [PIN]: systemd-cryptsetup attach with the key the LUKS2 header
# names (pkcs11-uri=auto), never asking (headless: the PIN in $PIN), one
# try.
attach() {
	CLOAK_PKCS11_SOCKET=$DISK_SOCKET PIN=${1:-$DISK_PIN} timeout 300 "$CRYPTSETUP" attach "$VOLUME" "$IMG" - \
		pkcs11-uri=auto,headless=true,tries=1,token-timeout=10s
}

@test "the disk's token: its own instance with an EC P-256 key that may derive" {
	for c in systemd-cryptenroll cryptsetup "$CRYPTSETUP"; do
		command -v "$c" >/dev/null || { echo "$c missing: the image's second layer adds cryptsetup-bin and systemd-cryptsetup (run-sysvm)"; return 1; }
	done
	[ -d /sys/module/dm_crypt ] || { echo "no dm_crypt: the initramfs loads it (run-sysvm)"; return 1; }
	run bash -c "printf '%s\n%s\n' $DISK_SO_PIN $DISK_PIN |
		cloak-pkcs11 init -s $SYSTEM_STORES/$DISK/token.img --label $DISK 2>&1"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	mkdir -p "$CREDSTORE"
	printf '%s' "$DISK_PIN" | systemd-creds encrypt - "$CREDSTORE/cloak-pkcs11-$DISK.pin"
	run systemctl enable --now "$SYSTEM_TOKEN$DISK.service"
	[ "$status" -eq 0 ] || { echo "$output"; systemctl status --no-pager "$SYSTEM_TOKEN$DISK.service"; return 1; }
	wait_active "$SYSTEM_TOKEN$DISK.service"
	run p11_disk --login --pin "$DISK_PIN" --keypairgen --key-type EC:prime256v1 --id 01 --label luks \
		--usage-derive
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ $output == *"Private Key Object; EC"*"Usage:"*"derive"* ]] || { echo "$output"; return 1; }
}

@test "systemd-cryptenroll (systemd 257) enrolls a LUKS2 image with the token's EC key; systemd-cryptsetup attach opens it with the PIN alone; a wrong PIN leaves it locked" {
	# A LUKS2 image opened by a key file, its first MiB known.
	(umask 077 && head -c 32 /dev/urandom >"$STATE/luks.key")
	head -c 1M /dev/urandom >"$STATE/luks.known"
	truncate -s 20M "$IMG"
	timeout 120 cryptsetup luksFormat -q --type luks2 --pbkdf pbkdf2 --pbkdf-force-iterations 1000 \
		--key-file "$STATE/luks.key" "$IMG"
	timeout 120 cryptsetup open --key-file "$STATE/luks.key" "$IMG" "$VOLUME.ref"
	dd if="$STATE/luks.known" of="/dev/mapper/$VOLUME.ref" bs=1M count=1 oflag=direct status=none
	timeout 60 cryptsetup close "$VOLUME.ref"
	# The token found by name through p11-kit; the PIN from $PIN.
	run env CLOAK_PKCS11_SOCKET="$DISK_SOCKET" PIN="$DISK_PIN" timeout 300 systemd-cryptenroll \
		--unlock-key-file="$STATE/luks.key" --pkcs11-token-uri="pkcs11:token=$DISK" "$IMG"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ $output == *"New PKCS#11 token enrolled as key slot 1."* ]] || { echo "$output"; return 1; }
	run cryptsetup luksDump --dump-json-metadata "$IMG"
	[ "$(python3 -c 'import json, sys; print(sum(t["type"] == "systemd-pkcs11" for t in json.load(sys.stdin)["tokens"].values()))' <<<"$output")" = 1 ] ||
		{ echo "$output"; return 1; }
	# Opened with the token: the derive, then the volume's first MiB is
	# what was written through the key file.
	run attach
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	grep -qxF "Successfully derived key with security token." <<<"$output" || { echo "$output"; return 1; }
	[ -b "/dev/mapper/$VOLUME" ] || { echo "no /dev/mapper/$VOLUME: $output"; return 1; }
	cmp -n 1048576 "$STATE/luks.known" "/dev/mapper/$VOLUME"
	run timeout 60 "$CRYPTSETUP" detach "$VOLUME"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[ ! -e "/dev/mapper/$VOLUME" ]
	# A wrong PIN: the token refuses the login, the volume stays locked.
	run attach wrong-pin-0000
	[ "$status" -ne 0 ] || { echo "$output"; return 1; }
	grep -qxF "PIN for token '$DISK' is incorrect, please try again." <<<"$output" || { echo "$output"; return 1; }
	[ ! -e "/dev/mapper/$VOLUME" ] || { echo "attached with a wrong PIN: $output"; return 1; }
}

#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The user's own PKCS#11 token as a user runs it (cloak-pkcs11,
# docs/packaging.md): `cloak-pkcs11 init` makes its store, the user enables
# its socket, and p11-kit-aware programs find it by name with no module
# path and nothing set: p11-kit, GnuTLS's p11tool, opensc's pkcs11-tool
# (through p11-kit's proxy module) and OpenSSH's ssh -I. Each command runs
# as the user in a login of its own (as_user). First boot.
bats_require_minimum_version 1.5.0
load helpers

PIN=alice-pin-1
SO_PIN=alice-so-pin-1

@test "the user makes a token with cloak-pkcs11 init and enables its socket" {
	run as_user "printf '%s\n%s\n' $SO_PIN $PIN | cloak-pkcs11 init --label alice 2>&1 &&
		stat -c '%a %U' ~/.local/share/cloak-pkcs11/token.img &&
		systemctl --user enable --now $USER_TOKEN_SOCKET 2>&1 && systemctl --user is-active $USER_TOKEN_SOCKET"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ $output == *"600 $SYSVM_USER"*active ]] || { echo "$output"; return 1; }
}

@test "p11-kit list-modules shows cloak's module and the user's token, found by name" {
	# Nothing points the module at the token: it finds the user's socket.
	run as_user 'if env | grep "^CLOAK_"; then exit 3; fi; p11-kit list-modules'
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	awk '/^module: / { m = ($2 == "cloak-pkcs11") } m && $1 == "token:" && $2 == "alice" { t = 1 } END { exit !t }' <<<"$output" ||
		{ echo "$output"; return 1; }
}

@test "p11tool --list-tokens shows the user's token" {
	run as_user 'p11tool --list-tokens'
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	grep -q '^	URL: pkcs11:.*token=alice' <<<"$output" || { echo "$output"; return 1; }
}

@test "pkcs11-tool makes an EC P-256 key in the token (through p11-kit's proxy module)" {
	run as_user "pkcs11-tool --module $P11_PROXY --token-label alice --login --pin $PIN \
		--keypairgen --key-type EC:prime256v1 --id 01 --label ssh 2>&1 &&
		pkcs11-tool --module $P11_PROXY --token-label alice --login --pin $PIN --list-objects --type privkey"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ $output == *"Private Key Object; EC"*"label:      ssh"* ]] || { echo "$output"; return 1; }
}

@test "ssh -I with p11-kit's proxy module logs in to this machine's sshd with the token's key" {
	# The PIN comes from an askpass program, as from a person at a prompt.
	run as_user "ssh-keygen -D $P11_PROXY | grep ecdsa-sha2-nistp256 >> ~/.ssh/authorized_keys &&
		printf '#!/bin/sh\necho $PIN\n' > ~/pin-askpass && chmod 700 ~/pin-askpass &&
		SSH_ASKPASS=~/pin-askpass SSH_ASKPASS_REQUIRE=force setsid -w ssh -I $P11_PROXY -o IdentityAgent=none \
			-o PasswordAuthentication=no -o KbdInteractiveAuthentication=no -o StrictHostKeyChecking=accept-new -o LogLevel=ERROR \
			\"\$(id -un)@127.0.0.1\" 'echo logged in with the token' </dev/null"
	[ "$status" -eq 0 ] && [ "$output" = "logged in with the token" ] || { echo "$output"; return 1; }
	# The control: the same login without the module has no key.
	run as_user "ssh -o IdentityAgent=none -o BatchMode=yes -o PasswordAuthentication=no \"\$(id -un)@127.0.0.1\" true"
	[ "$status" -eq 255 ] || { echo "$output"; return 1; }
}

@test "systemctl --user stop wipes the token guest; the store keeps the key for the next start" {
	# (systemctl warns that the socket stays: it does, for the next client.)
	run as_user "systemctl --user stop $USER_TOKEN 2>/dev/null && systemctl --user show -p Result --value $USER_TOKEN"
	[ "$status" -eq 0 ] && [ "$output" = success ] || { echo "$output"; return 1; }
	run ! pgrep -u "$SYSVM_USER" -f 'pkcs11\.elf'
	run as_user "pkcs11-tool --module $P11_PROXY --token-label alice --login --pin $PIN --list-objects --type privkey"
	[[ $output == *"label:      ssh"* ]] || { echo "$output"; return 1; }
}

#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The ssh-agent guest (services/ssh-agent, docs/ssh-agent.md) driven by
# Debian's OpenSSH tools: ssh-add, ssh-keygen -Y, ssh against a real sshd
# on 127.0.0.1. Every guest signature costs seconds where KVM emulates guest
# code, so each test makes only a few. CLOAK_TEST_MEMORY=secret|gmem|shared
# runs the suite on that guest-memory backend (helpers.bash).
bats_require_minimum_version 1.5.0
load helpers

AGENT_ELF=$ROOT/$O/services/ssh-agent.elf
WRAPPER=$ROOT/$O/cloak-ssh-agent
KEYGEN=$ROOT/$O/cloak-ssh-keygen
SCAN=$ROOT/tests/integration/keyscan.py
CLIENT=$ROOT/services/ssh-agent/testing/agent_client.py

setup() {
	TMP=$(mktemp -d)
	PIDS=()
	AGENT_PID=
	# Nothing from the environment: no user agent, no user config.
	unset SSH_AUTH_SOCK SSH_AGENT_PID SSH_ASKPASS DISPLAY
}

teardown() {
	[ -n "$AGENT_PID" ] && kill "$AGENT_PID" 2>/dev/null
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$TMP"
	true
}

# start_agent [MONITOR-ARGS...] [-- GUEST-ARGS...]: the agent guest in the
# background with its channel on $TMP/agent.sock (owner-only), its pages
# dumped at exit to $TMP/shared.dump, output in $TMP/monitor.out; waits for
# its "ready" line and exports SSH_AUTH_SOCK.
start_agent() {
	local mon=() guest=()
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do mon+=("$1"); shift; done
	[ "${1:-}" = "--" ] && shift
	guest=("$@")
	SOCK=$TMP/agent.sock
	(umask 077; exec "$CLOAK" --timeout=900 "${mon[@]}" \
		--channel agent=listen:"$SOCK" --dump-shared="$TMP/shared.dump" \
		"$AGENT_ELF" -- "${guest[@]}") > "$TMP/monitor.out" 2>&1 &
	AGENT_PID=$!
	wait_for_line "$AGENT_PID" "$TMP/monitor.out" '^ssh-agent: ready' || return 1
	export SSH_AUTH_SOCK=$SOCK
}

# stop_agent: SIGTERM (the monitor wipes guest memory, exit 240).
stop_agent() {
	kill -TERM "$AGENT_PID"
	AGENT_STATUS=0
	wait "$AGENT_PID" || AGENT_STATUS=$?
	AGENT_PID=
	[ "$AGENT_STATUS" -eq 240 ] || { echo "monitor exit $AGENT_STATUS"; cat "$TMP/monitor.out"; return 1; }
}

# new_key NAME [TYPE [BITS]]: an unencrypted key pair $TMP/NAME{,.pub},
# ECDSA P-256 unless TYPE is ed25519 or rsa (BITS, default 2048).
new_key() {
	if [ "${2:-ecdsa}" = ed25519 ]; then
		ssh-keygen -q -t ed25519 -N '' -C "$1 key" -f "$TMP/$1"
	elif [ "$2" = rsa ]; then
		ssh-keygen -q -t rsa -b "${3:-2048}" -N '' -C "$1 key" -f "$TMP/$1"
	else
		ssh-keygen -q -t ecdsa -b 256 -N '' -C "$1 key" -f "$TMP/$1"
	fi
}

# need_ed25519_rsa: Ed25519 and RSA run only where the CPU runs guest code
# (libsodium's code has SSE arithmetic; an RSA signature takes tens of
# seconds under KVM's emulator: docs/ssh-agent.md).
need_ed25519_rsa() {
	need_native_cpu "where the agent refuses Ed25519 (SSE arithmetic) and RSA (too slow)"
}

# c CMD...: an OpenSSH client, bounded in time.
c() {
	timeout 120 "$@"
}

# sign_verify PUB: ssh-keygen -Y sign through the agent, -Y verify. The
# public key is copied where no private key lies next to it: ssh-keygen
# would sign with that file itself if the agent refused.
sign_verify() {
	echo "signed through the agent $RANDOM" > "$TMP/msg"
	rm -f "$TMP/msg.sig"
	cp "$1" "$TMP/agent-only.pub"
	[ ! -e "$TMP/agent-only" ]
	c ssh-keygen -Y sign -n file -f "$TMP/agent-only.pub" "$TMP/msg" || return 1
	echo "me $(cat "$1")" > "$TMP/allowed"
	c ssh-keygen -Y verify -f "$TMP/allowed" -I me -n file -s "$TMP/msg.sig" < "$TMP/msg"
}

# held_then_deleted KEY FOUND SECRET...: adds $TMP/KEY and signs with it;
# the first SECRET is then in guest RAM (the control: the scan's output
# has FOUND); after ssh-add -d, no SECRET is. For --memory=shared guests.
held_then_deleted() {
	local key=$1 found=$2 v
	shift 2
	c ssh-add -q "$TMP/$key"
	sign_verify "$TMP/$key.pub"
	run "$SCAN" key-proc "$1" "$AGENT_PID"
	[ "$status" -eq 1 ] || { echo "$key while held: $output"; return 1; }
	[[ $output == *"$found"* ]] || { echo "$key while held: $output"; return 1; }
	c ssh-add -q -d "$TMP/$key.pub"
	for v in "$@"; do
		run "$SCAN" key-proc "$v" "$AGENT_PID"
		[ "$status" -eq 0 ] || { echo "$key after -d: $output"; return 1; }
	done
}

# ssh_login PUB: ssh to the test sshd with only the agent's key PUB.
ssh_login() {
	c ssh -F /dev/null -o IdentityAgent="$SSH_AUTH_SOCK" -o IdentitiesOnly=yes \
		-o IdentityFile="$1" -o UserKnownHostsFile="$TMP/known_hosts" \
		-o StrictHostKeyChecking=yes -o BatchMode=yes -o ConnectTimeout=60 \
		-p "$PORT" root@127.0.0.1 'echo logged in as $(id -un)'
}

# record_traffic: clients reach the agent through a relay that writes each
# connection's bytes to $TMP/traffic.N (N from 0, in order).
record_traffic() {
	"$CLIENT" proxy "$TMP/rec.sock" "$SOCK" "$TMP/traffic" &
	PIDS+=($!)
	wait_for_socket "$TMP/rec.sock" || return 1
	export SSH_AUTH_SOCK=$TMP/rec.sock
}

# made_in_guest KEYGEN-ARGS...: an sshd, the agent with its test hooks
# behind the traffic relay, and cloak-ssh-keygen KEYGEN-ARGS through it
# (up to 600 s: an RSA key's primes); its output in $output.
made_in_guest() {
	start_sshd
	start_agent -- --test-hooks
	record_traffic
	run timeout 600 "$KEYGEN" "$@"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
}

# crossed_once SECRET...: the first connection's traffic (the add) holds the
# first SECRET, the control; after the agent is stopped, none of them is in
# any later connection's traffic, the monitor's output or the shared-page
# dump.
crossed_once() {
	run "$SCAN" key "$1" "$TMP/traffic.0"
	[ "$status" -eq 1 ] || { echo "control not found: $output"; return 1; }
	[[ $output == *"found big-endian"* ]] || return 1
	stop_agent || return 1
	local files=("$TMP"/traffic.[1-9]* "$TMP/monitor.out" "$TMP/shared.dump") d
	[ "${#files[@]}" -ge 8 ] || { echo "only ${#files[@]} files to scan"; return 1; }
	for d in "$@"; do
		run "$SCAN" key "$d" "${files[@]}"
		[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	done
}

# generated_key_works PUB: the agent lists the key made in the guest, it
# signs (ssh-keygen -Y) and logs in to the test sshd; then the agent (with
# --test-hooks) gives the hash of its secret in $KEYHASH, and is stopped.
generated_key_works() {
	[ "$(c ssh-add -L)" = "$(cat "$1")" ] || return 1
	sign_verify "$1" || return 1
	cp "$1" "$TMP/authorized_keys"
	run ssh_login "$1"
	[ "$status" -eq 0 ] || { echo "$output"; cat "$TMP/sshd.log"; return 1; }
	[ "$output" = "logged in as root" ] || return 1
	KEYHASH=$(timeout 60 "$CLIENT" "$SSH_AUTH_SOCK" keyhash "$1")
	[[ $KEYHASH =~ ^[0-9a-f]{64}$ ]] || return 1
	stop_agent
}

# hash_nowhere CONTROL-HEX: the 32 bytes CONTROL-HEX (public, carried by
# the traffic) are found by their SHA-256 in the traffic, the control; no
# 32 bytes hashing to $KEYHASH are in the traffic, the monitor's output,
# the shared-page dump or the public key file $TMP/gen.pub.
hash_nowhere() {
	local ch
	ch=$(printf '%s' "$1" | xxd -r -p | sha256sum | cut -c1-64)
	run "$SCAN" hash "$ch" "$TMP"/traffic.*
	[ "$status" -eq 1 ] || { echo "control not found: $output"; return 1; }
	run "$SCAN" hash "$KEYHASH" "$TMP"/traffic.* "$TMP/monitor.out" "$TMP/shared.dump" "$TMP/gen.pub"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
}

@test "SSE arithmetic in the agent guest is only in libsodium's Ed25519 code and GMP's FFT multiplication (the emulating KVM cannot run it); a BearSSL object that has some is caught" {
	# Functions with instructions on xmm/ymm/zmm registers that are not
	# plain moves.
	sse_arith() {
		objdump -d --no-show-raw-insn "$@" |
			awk '/^[0-9a-f]+ <.*>:$/ { fn = $2 } /%[xyz]mm/ && $2 !~ /^mov/ { print fn }' | sort -u
	}
	[ -f "$AGENT_ELF" ]
	# The functions defined by the libsodium objects the guest links.
	local sodium=(libsodium_la-ed25519_ref10.o libsodium_la-hash_sha512_cp.o
		libsodium_la-sign.o libsodium_la-keypair.o)
	(cd "$TMP" && ar x /usr/lib/x86_64-linux-gnu/libsodium.a "${sodium[@]}")
	# And GMP's FFT multiplication (mul_fft.o), which GMP runs only on
	# numbers of thousands of limbs: ECDSA's on Nettle have 4.
	(cd "$TMP" && ar x /usr/lib/x86_64-linux-gnu/libgmp.a mul_fft.o)
	(cd "$TMP" && nm --defined-only "${sodium[@]}" mul_fft.o) | awk 'NF == 3 { print "<" $3 ">:" }' |
		sort -u > "$TMP/sodium.fns"
	run sse_arith "$AGENT_ELF"
	[ -n "$output" ] # control: libsodium's ge25519_* have some
	[[ $output == *"<ge25519_scalarmult_base>:"* ]]
	run comm -23 <(sse_arith "$AGENT_ELF") "$TMP/sodium.fns"
	[ -z "$output" ] || { echo "SSE arithmetic outside libsodium's Ed25519 code and GMP's FFT: $output"; return 1; }
	(cd "$TMP" && ar x /usr/lib/x86_64-linux-gnu/libbearssl.a ec_p256_m15.o)
	run sse_arith "$TMP/ec_p256_m15.o"
	[ -n "$output" ]
	run comm -23 <(sse_arith "$TMP/ec_p256_m15.o") "$TMP/sodium.fns"
	[ -n "$output" ]
}

@test "the key scanner finds every encoding of a scalar it looks for, and nothing in random bytes" {
	run "$SCAN" selftest
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ $output == *"plants, each found"* ]]
}

@test "cloak-ssh-agent prints ssh-agent -s lines, listens owner-only; -k stops it and removes the socket" {
	need_kvm
	run env TMPDIR="$TMP" CLOAK="$CLOAK" timeout 120 "$WRAPPER"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ ${lines[0]} =~ ^SSH_AUTH_SOCK=(/.+/cloak-ssh-[^/]+/agent\.[0-9]+)\;\ export\ SSH_AUTH_SOCK\;$ ]]
	[[ ${lines[1]} =~ ^SSH_AGENT_PID=([0-9]+)\;\ export\ SSH_AGENT_PID\;$ ]]
	[[ ${lines[2]} =~ ^echo\ Agent\ pid\ [0-9]+\;$ ]]
	eval "$output" > /dev/null
	AGENT_PID=$SSH_AGENT_PID
	[ "$(stat -c %a "$SSH_AUTH_SOCK")" = 600 ] || [ "$(stat -c %a "$SSH_AUTH_SOCK")" = 700 ]
	[ "$(stat -c %a "$(dirname "$SSH_AUTH_SOCK")")" = 700 ]
	[[ $(readlink "/proc/$SSH_AGENT_PID/exe") == */cloak ]]
	run -1 c ssh-add -l
	[ "$output" = "The agent has no identities." ]
	run env SHELL=/bin/csh "$WRAPPER" -k
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "unsetenv SSH_AUTH_SOCK;" ]
	[ "${lines[2]}" = "echo Agent pid $SSH_AGENT_PID killed;" ]
	run kill -0 "$SSH_AGENT_PID"
	[ "$status" -ne 0 ]
	AGENT_PID=
	[ ! -e "$SSH_AUTH_SOCK" ]
	[ ! -e "$(dirname "$SSH_AUTH_SOCK")" ]
	# -k again, or on a process that is no agent: one line, exit 1.
	run "$WRAPPER" -k
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ $output == "cloak-ssh-agent: process "*"is not a cloak ssh-agent"* ]]
	run env -u SSH_AGENT_PID "$WRAPPER" -k
	[ "$status" -eq 1 ]
	[[ $output == *"SSH_AGENT_PID is not set"* ]]
}

@test "stopping the agent wipes guest memory (the monitor's SIGTERM path)" {
	need_kvm
	start_agent --verbose
	new_key id
	c ssh-add "$TMP/id"
	stop_agent
	grep -q 'guest memory wiped' "$TMP/monitor.out"
}

@test "ssh-add adds an ECDSA key; -l and -L list it; several clients one after another and at once; -d and -D remove it" {
	need_kvm
	start_agent
	new_key id
	new_key other
	run c ssh-add "$TMP/id"
	[ "$status" -eq 0 ]
	[[ $output == "Identity added: $TMP/id (id key)" ]]
	run c ssh-add -l
	[ "$status" -eq 0 ]
	[ "$output" = "$(ssh-keygen -l -f "$TMP/id.pub")" ]
	run c ssh-add -L
	[ "$output" = "$(cat "$TMP/id.pub")" ]
	c ssh-add -q "$TMP/other"
	for i in 1 2 3; do
		run c ssh-add -l
		[ "${#lines[@]}" -eq 2 ] || { echo "client $i: $output"; return 1; }
	done
	# Three at once: the agent serves them in turn.
	local at_once=()
	for i in 1 2 3; do
		c ssh-add -L > "$TMP/list.$i" &
		at_once+=($!)
	done
	wait "${at_once[@]}"
	for i in 1 2 3; do [ "$(wc -l < "$TMP/list.$i")" -eq 2 ]; done
	run c ssh-add -d "$TMP/id"
	[ "$status" -eq 0 ]
	[[ $output == "Identity removed: $TMP/id"* ]]
	run c ssh-add -L
	[ "$output" = "$(cat "$TMP/other.pub")" ]
	run -1 c ssh-add -d "$TMP/id"
	run c ssh-add -D
	[ "$status" -eq 0 ]
	[ "$output" = "All identities removed." ]
	run -1 c ssh-add -l
	[ "$output" = "The agent has no identities." ]
}

@test "ssh-add -x locks: nothing listed, signing and adding fail; -X with a wrong passphrase fails, the right one unlocks" {
	need_kvm
	start_agent
	new_key id
	c ssh-add -q "$TMP/id"
	printf '#!/bin/sh\necho "$LOCK_PASS"\n' > "$TMP/askpass"
	chmod +x "$TMP/askpass"
	export SSH_ASKPASS=$TMP/askpass SSH_ASKPASS_REQUIRE=force
	LOCK_PASS="correct horse" run c ssh-add -x
	[ "$status" -eq 0 ]
	[[ $output == *"Agent locked."* ]]
	run -1 c ssh-add -l
	[ "$output" = "The agent has no identities." ]
	run ! sign_verify "$TMP/id.pub"
	new_key other
	run ! c ssh-add "$TMP/other"
	LOCK_PASS="wrong horse" run c ssh-add -X
	[ "$status" -ne 0 ]
	[[ $output == *"Failed to unlock agent"* ]]
	run -1 c ssh-add -l
	LOCK_PASS="correct horse" run c ssh-add -X
	[ "$status" -eq 0 ]
	[[ $output == *"Agent unlocked."* ]]
	run c ssh-add -l
	[ "$status" -eq 0 ]
	[[ $output == *"(ECDSA)" ]]
	sign_verify "$TMP/id.pub"
}

@test "ssh-add -t: the key is gone when its lifetime ends, with no client connected" {
	need_kvm
	start_agent
	new_key id
	run c ssh-add -t 4 "$TMP/id"
	[ "$status" -eq 0 ]
	[[ $output == *"Lifetime set to 4 seconds"* ]]
	t0=$(date +%s)
	run c ssh-add -l
	[ "$status" -eq 0 ]
	# Lifetimes count from the add; give the guest time to reap.
	sleep $((4 + 2 - ($(date +%s) - t0)))
	run -1 c ssh-add -l
	[ "$output" = "The agent has no identities." ]
	run ! sign_verify "$TMP/id.pub"
}

@test "refused: confirm constraint (the protocol's failure reply)" {
	need_kvm
	start_agent
	new_key id
	run ! c ssh-add -c "$TMP/id"
	[[ $output == *"Could not add identity"* ]]
	new_key ed ed25519
	run ! c ssh-add -c "$TMP/ed"
	new_key rsa rsa
	run ! c ssh-add -c "$TMP/rsa"
	run -1 c ssh-add -l
	[ "$output" = "The agent has no identities." ]
}

@test "Ed25519: ssh-add, -l and -L; ssh-keygen -Y sign verifies; ssh logs in to sshd after the key file is deleted; its seed and the SHA-512 halves of it are in no later traffic, output or dump" {
	need_kvm
	need_ed25519_rsa
	start_sshd
	start_agent
	new_key ed ed25519
	new_key id
	cp "$TMP/ed.pub" "$TMP/authorized_keys"
	local secrets
	secrets=("$("$SCAN" scalar "$TMP/ed")")
	mapfile -t -O 1 secrets < <("$SCAN" ed25519-derived "$TMP/ed")
	[ "${#secrets[@]}" -eq 3 ]
	# Control: the scanner finds the key's seed in the key file.
	run "$SCAN" key "${secrets[0]}" "$TMP/ed"
	[ "$status" -eq 1 ]
	record_traffic
	run c ssh-add "$TMP/ed"
	[ "$status" -eq 0 ]
	[[ $output == "Identity added: $TMP/ed (ed key)" ]]
	c ssh-add -q "$TMP/id"
	rm "$TMP/ed"
	run c ssh-add -l
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$(ssh-keygen -l -f "$TMP/ed.pub")" ]
	[[ ${lines[0]} == *"(ED25519)" ]]
	[[ ${lines[1]} == *"(ECDSA)" ]]
	run c ssh-add -L
	[ "${lines[0]}" = "$(cat "$TMP/ed.pub")" ]
	sign_verify "$TMP/ed.pub"
	grep -q "^-----BEGIN SSH SIGNATURE-----" "$TMP/msg.sig"
	run ssh_login "$TMP/ed.pub"
	[ "$status" -eq 0 ] || { echo "$output"; cat "$TMP/sshd.log"; return 1; }
	[ "$output" = "logged in as root" ]
	grep -q "Accepted publickey for root from 127.0.0.1.*ED25519 $(ssh-keygen -l -f "$TMP/ed.pub" | awk '{print $2}')" "$TMP/sshd.log"
	# The ECDSA key added beside it still signs.
	sign_verify "$TMP/id.pub"
	run c ssh-add -d "$TMP/ed.pub"
	[ "$status" -eq 0 ]
	run ! ssh_login "$TMP/ed.pub"
	run ! sign_verify "$TMP/ed.pub"
	# Control: the add's own traffic carries the key's seed (it crosses once).
	crossed_once "${secrets[@]}"
}

@test "RSA: ssh-add of 2048- and 4096-bit keys, -l and -L; ssh-keygen -Y sign verifies; ssh logs in after the key file is deleted; -d; p, q, d, dp, dq are in no later traffic, output or dump" {
	need_kvm
	need_ed25519_rsa
	start_sshd
	start_agent
	new_key rsa rsa
	new_key big rsa 4096
	cp "$TMP/rsa.pub" "$TMP/authorized_keys"
	local secrets
	mapfile -t secrets < <("$SCAN" rsa-secrets "$TMP/rsa")
	[ "${#secrets[@]}" -eq 5 ]
	# Control: the scanner finds p in the key file.
	run "$SCAN" key "${secrets[0]}" "$TMP/rsa"
	[ "$status" -eq 1 ]
	record_traffic
	run c ssh-add "$TMP/rsa"
	[ "$status" -eq 0 ] || { echo "ssh-add: $status: $output"; return 1; }
	[[ $output == "Identity added: $TMP/rsa (rsa key)" ]]
	run c ssh-add "$TMP/big"
	[ "$status" -eq 0 ] || { echo "ssh-add: $status: $output"; return 1; }
	rm "$TMP/rsa"
	run c ssh-add -l
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$(ssh-keygen -l -f "$TMP/rsa.pub")" ]
	[[ ${lines[0]} == "2048 SHA256:"*"(RSA)" ]]
	[[ ${lines[1]} == "4096 SHA256:"*"(RSA)" ]]
	run c ssh-add -L
	[ "${lines[0]}" = "$(cat "$TMP/rsa.pub")" ]
	[ "${lines[1]}" = "$(cat "$TMP/big.pub")" ]
	sign_verify "$TMP/rsa.pub"
	grep -q "^-----BEGIN SSH SIGNATURE-----" "$TMP/msg.sig"
	sign_verify "$TMP/big.pub"
	run ssh_login "$TMP/rsa.pub"
	[ "$status" -eq 0 ] || { echo "$output"; cat "$TMP/sshd.log"; return 1; }
	[ "$output" = "logged in as root" ]
	grep -q "Accepted publickey for root from 127.0.0.1.*RSA $(ssh-keygen -l -f "$TMP/rsa.pub" | awk '{print $2}')" "$TMP/sshd.log"
	run c ssh-add -d "$TMP/rsa.pub"
	[ "$status" -eq 0 ]
	run ! ssh_login "$TMP/rsa.pub"
	run ! sign_verify "$TMP/rsa.pub"
	run -0 c ssh-add -l
	[[ $output == "4096 SHA256:"*"(RSA)" ]]
	# Control: the add's own traffic carries p (the key crosses once).
	crossed_once "${secrets[@]}"
}

@test "ssh-keygen -Y sign with the agent's key verifies with ssh-keygen -Y verify; a changed message does not" {
	need_kvm
	start_agent
	new_key id
	c ssh-add -q "$TMP/id"
	sign_verify "$TMP/id.pub"
	echo tampered >> "$TMP/msg"
	run ! c ssh-keygen -Y verify -f "$TMP/allowed" -I me -n file -s "$TMP/msg.sig" < "$TMP/msg"
}

@test "ssh logs in to a real sshd on 127.0.0.1 with the agent's key after the key file is deleted" {
	need_kvm
	start_sshd
	start_agent
	new_key id
	cp "$TMP/id.pub" "$TMP/authorized_keys"
	c ssh-add -q "$TMP/id"
	rm "$TMP/id"
	run ssh_login "$TMP/id.pub"
	[ "$status" -eq 0 ] || { echo "$output"; cat "$TMP/sshd.log"; return 1; }
	[ "$output" = "logged in as root" ]
	grep -q "Accepted publickey for root from 127.0.0.1.*ECDSA $(ssh-keygen -l -f "$TMP/id.pub" | awk '{print $2}')" "$TMP/sshd.log"
	# Control: without the key in the agent, the same login fails.
	c ssh-add -q -D
	run ! ssh_login "$TMP/id.pub"
}

@test "after ssh-add the scalar is in no file, no later channel traffic, no monitor output, no shared-page dump" {
	need_kvm
	start_agent
	new_key id
	d=$("$SCAN" scalar "$TMP/id")
	# Controls: the scanner finds the scalar in the key file (base64).
	run "$SCAN" key "$d" "$TMP/id"
	[ "$status" -eq 1 ]
	[[ $output == *"found base64"* ]]
	# The clients talk through a recorder: connection N's bytes in traffic.N.
	record_traffic
	c ssh-add -q "$TMP/id"
	rm "$TMP/id"
	c ssh-add -l > /dev/null
	sign_verify "$TMP/id.pub"
	c ssh-add -L > /dev/null
	# Control: the add's own traffic carries the scalar (it crosses once).
	run "$SCAN" key "$d" "$TMP/traffic.0"
	[ "$status" -eq 1 ]
	[[ $output == *"found mpint"* ]]
	ls "$TMP"/traffic.3
	stop_agent
	[ "$(stat -c %s "$TMP/shared.dump")" -gt 4096 ]
	files=("$TMP"/traffic.[1-9]* "$TMP/monitor.out" "$TMP/shared.dump")
	[ "${#files[@]}" -ge 5 ]
	run "$SCAN" key "$d" "${files[@]}"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	# And no file the run left behind, anywhere in the test directory.
	while IFS= read -r f; do
		[[ $f == "$TMP/traffic.0" ]] && continue
		run "$SCAN" key "$d" "$f"
		[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	done < <(find "$TMP" -type f)
}

@test "root reads the monitor's whole address space while the agent holds a key: guest RAM (secret memory) is refused, the rest has no scalar" {
	need_kvm
	need_root
	local backend
	backend=${CLOAK_TEST_MEMORY:-$(auto_backend)}
	case $backend in
	secret) ;;
	gmem) gmem_gives_up || skip "here the monitor keeps its mapping of a guest_memfd, readable through /proc/PID/mem ($(kvm_kind) KVM; docs/ssh-agent.md)" ;;
	*) skip "guest RAM from --memory=$backend is readable through /proc/PID/mem (docs/ssh-agent.md)" ;;
	esac
	start_agent
	new_key id
	d=$("$SCAN" scalar "$TMP/id")
	c ssh-add -q "$TMP/id"
	sign_verify "$TMP/id.pub"
	run "$SCAN" key-proc "$d" "$AGENT_PID"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ $output =~ ^read\ [0-9]{6,}\ bytes ]]
	# Secret memory stays mapped but is refused; a guest_memfd where KVM
	# runs guest code is given up by the monitor at PROTECT.
	[ "$backend" != secret ] || [[ $output == *"refused: /secretmem (Input/output error)"* ]]
}

@test "--memory=shared, where the host can read guest RAM: the scalar is there while held, gone after -D, after a cut-off add and when its lifetime ends" {
	need_kvm
	need_root
	start_agent --memory=shared
	new_key id
	new_key cut
	new_key brief
	d=$("$SCAN" scalar "$TMP/id")
	c ssh-add -q "$TMP/id"
	sign_verify "$TMP/id.pub"
	# Control: the held key is found in guest RAM.
	run "$SCAN" key-proc "$d" "$AGENT_PID"
	[ "$status" -eq 1 ]
	[[ $output == *"found big-endian in /memfd:cloak-guest"* ]]
	c ssh-add -q -D
	run "$SCAN" key-proc "$d" "$AGENT_PID"
	[ "$status" -eq 0 ] || { echo "after -D: $output"; return 1; }
	# An add cut off after the scalar, then the client leaves.
	dc=$("$SCAN" scalar "$TMP/cut")
	timeout 60 "$CLIENT" "$SOCK" add-truncated "$dc" "$TMP/cut.pub"
	run -1 c ssh-add -l # served after the cut-off one
	run "$SCAN" key-proc "$dc" "$AGENT_PID"
	[ "$status" -eq 0 ] || { echo "after a cut-off add: $output"; return 1; }
	# A lifetime that ends with no client connected (long enough for the
	# first scan of guest RAM, which takes seconds where the CPU is emulated).
	db=$("$SCAN" scalar "$TMP/brief")
	c ssh-add -q -t 15 "$TMP/brief"
	run "$SCAN" key-proc "$db" "$AGENT_PID"
	[ "$status" -eq 1 ]
	sleep 17
	run "$SCAN" key-proc "$db" "$AGENT_PID"
	[ "$status" -eq 0 ] || { echo "after the lifetime: $output"; return 1; }
}

@test "--memory=shared, Ed25519: the key's seed is in guest RAM while held; after -d neither it nor the SHA-512 halves a signature derives from it are" {
	need_kvm
	need_root
	need_ed25519_rsa
	start_agent --memory=shared
	new_key ed ed25519
	local de
	de=("$("$SCAN" scalar "$TMP/ed")")
	mapfile -t -O 1 de < <("$SCAN" ed25519-derived "$TMP/ed")
	[ "${#de[@]}" -eq 3 ]
	# The control: the held seed is found in guest RAM.
	held_then_deleted ed "found big-endian in /memfd:cloak-guest" "${de[@]}"
}

@test "--memory=shared, RSA: p is in guest RAM while held; after a signature and -d none of p, q, d, dp, dq is" {
	need_kvm
	need_root
	need_ed25519_rsa
	start_agent --memory=shared
	new_key rsa rsa
	local secrets
	mapfile -t secrets < <("$SCAN" rsa-secrets "$TMP/rsa")
	[ "${#secrets[@]}" -eq 5 ]
	# The control: the held key's p is found in guest RAM.
	held_then_deleted rsa "in /memfd:cloak-guest" "${secrets[@]}"
}

@test "the agent says which key types this host can run; where KVM emulates guest code Ed25519 and RSA are refused and the agent goes on" {
	need_kvm
	start_agent
	new_key ed ed25519
	new_key rsa rsa
	new_key id
	if [ "$(kvm_kind)" = hardware ]; then
		grep -q '^ssh-agent: ready;.*; key types ecdsa-sha2-nistp256, ssh-ed25519, ssh-rsa' "$TMP/monitor.out"
		c ssh-add -q "$TMP/ed"
		c ssh-add -q "$TMP/rsa"
		run -0 c ssh-add -l
		[[ ${lines[0]} == *"(ED25519)" ]]
		[[ ${lines[1]} == *"(RSA)" ]]
	else
		grep -q '^ssh-agent: ready;.*; key types ecdsa-sha2-nistp256 (ssh-ed25519 and ssh-rsa refused: this host.s KVM emulates guest code' "$TMP/monitor.out"
		run ! c ssh-add "$TMP/ed"
		[[ $output == *"Could not add identity"* ]]
		run ! c ssh-add "$TMP/rsa"
		[[ $output == *"Could not add identity"* ]]
		run -1 c "$KEYGEN" -t ed25519
		[[ $output == *"refused to generate a key"* ]]
		run -1 c "$KEYGEN" -t rsa
		[[ $output == *"refused to generate a key"* ]]
		run -1 c ssh-add -l
		[ "$output" = "The agent has no identities." ]
	fi
	# Either way the agent goes on serving ECDSA.
	c ssh-add -q "$TMP/id"
	sign_verify "$TMP/id.pub"
	kill -0 "$AGENT_PID"
}

@test "a key made inside the guest (cloak-ssh-keygen): listed, signs, logs in; its scalar is nowhere the host can see" {
	need_kvm
	made_in_guest -C "made in the guest"
	[[ $output =~ ^ecdsa-sha2-nistp256\ AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABB[A-Za-z0-9+/]+=*\ made\ in\ the\ guest$ ]]
	echo "$output" > "$TMP/gen.pub"
	ssh-keygen -l -f "$TMP/gen.pub" > /dev/null # OpenSSH reads it
	generated_key_works "$TMP/gen.pub"
	# Control for the hash search: the public X coordinate is in the traffic.
	hash_nowhere "$(python3 -c 'import base64,sys; b=base64.b64decode(open(sys.argv[1]).read().split()[1]); print(b[-64:-32].hex())' "$TMP/gen.pub")"
}

@test "an Ed25519 key made inside the guest (cloak-ssh-keygen -t ed25519): listed, signs, logs in; its seed is nowhere the host can see" {
	need_kvm
	need_ed25519_rsa
	made_in_guest -t ed25519 -C "ed made in the guest" -L 600 -f "$TMP/gen.pub"
	[[ $(cat "$TMP/gen.pub") =~ ^ssh-ed25519\ AAAAC3NzaC1lZDI1NTE5AAAAI[A-Za-z0-9+/]{43}\ ed\ made\ in\ the\ guest$ ]]
	[[ $(ssh-keygen -l -f "$TMP/gen.pub") == "256 SHA256:"*"(ED25519)" ]]
	generated_key_works "$TMP/gen.pub"
	# Control for the hash search: the public key A is in the traffic.
	hash_nowhere "$(python3 -c 'import base64,sys; print(base64.b64decode(open(sys.argv[1]).read().split()[1])[-32:].hex())' "$TMP/gen.pub")"
}

@test "an RSA key made inside the guest (cloak-ssh-keygen -t rsa): 3072 bits, listed, signs, logs in; its p is nowhere the host can see" {
	need_kvm
	need_ed25519_rsa
	made_in_guest -t rsa -C "rsa made in the guest" -f "$TMP/gen.pub"
	[[ $(cat "$TMP/gen.pub") =~ ^ssh-rsa\ AAAAB3NzaC1yc2EAAAADAQAB[A-Za-z0-9+/]+=*\ rsa\ made\ in\ the\ guest$ ]]
	[[ $(ssh-keygen -l -f "$TMP/gen.pub") == "3072 SHA256:"*"(RSA)" ]]
	# The hook's hash is of p's top 32 bytes (docs/ssh-agent.md).
	generated_key_works "$TMP/gen.pub"
	# Control for the hash search: the top 32 bytes of n are in the traffic.
	hash_nowhere "$(python3 -c 'import base64,sys; b=base64.b64decode(open(sys.argv[1]).read().split()[1]); print(b[-384:-352].hex())' "$TMP/gen.pub")"
}

@test "cloak-ssh-keygen errors: no agent, OpenSSH's own agent (no keygen@cloak), bad options" {
	run -2 env -u SSH_AUTH_SOCK "$KEYGEN"
	[[ $output == *"SSH_AUTH_SOCK is not set"* ]]
	run -1 "$KEYGEN" -a "$TMP/nothing.sock"
	[[ $output == "cloak-ssh-keygen: cannot connect to the agent at $TMP/nothing.sock"* ]]
	run -2 "$KEYGEN" -L soon -a x
	[[ $output == *"-L takes a lifetime in seconds"* ]]
	run -2 "$KEYGEN" -t dsa -a x
	[[ $output == "cloak-ssh-keygen: -t takes a key type the agent can make, ecdsa, ed25519 or rsa, not 'dsa'" ]]
	ssh-agent -D -a "$TMP/openssh.sock" > /dev/null 2>&1 &
	PIDS+=($!)
	wait_for_socket "$TMP/openssh.sock"
	run -1 timeout 60 "$KEYGEN" -a "$TMP/openssh.sock"
	[[ $output == *"refused to generate a key"*"OpenSSH's ssh-agent has no keygen@cloak"* ]]
}

@test "hostile clients get a failure reply or a closed connection, one after another; the agent keeps serving" {
	need_kvm
	start_agent
	run timeout 300 "$CLIENT" "$SOCK" hostile
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ $output == *"0 of "*" cases wrong"* ]]
	run -1 c ssh-add -l
	[ "$output" = "The agent has no identities." ]
	kill -0 "$AGENT_PID"
	[ "$(grep -c 'hung up on a client: bad message length' "$TMP/monitor.out")" -eq 3 ]
	stop_agent
	! grep -q '^cloak: ' <(grep -v 'interrupted by signal' "$TMP/monitor.out")
}

@test "a client that stalls mid-message or sits idle is hung up on, so the next client is served" {
	need_kvm
	start_agent -- --message-timeout=2 --idle=3
	run timeout 60 "$CLIENT" "$SOCK" stall
	[ "$status" -eq 0 ]
	[[ $output =~ ^hung\ up\ after\ [1-5]\.[0-9]\ s$ ]]
	# An idle client holds the agent until --idle passes; ssh-add waits.
	python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.settimeout(30)
t0 = time.time(); sys.exit(0 if s.recv(1) == b"" and time.time() - t0 < 20 else 1)' "$SOCK" &
	idle=$!
	sleep 0.5
	run -1 c ssh-add -l
	[ "$output" = "The agent has no identities." ]
	wait "$idle"
	grep -q 'hung up on a client: message timeout' "$TMP/monitor.out"
}

@test "the agent guest without its channel says how to run it" {
	need_kvm
	run_cloak "$AGENT_ELF"
	[ "$status" -eq 1 ]
	[[ $output == *"run with --channel agent=listen:SOCKET"* ]]
	run_cloak "$AGENT_ELF" -- --idle=0
	[ "$status" -eq 2 ]
	[[ $output == *"--idle must be 1..86400 seconds"* ]]
}

# agent_pfns, kcore_dump PFNS OUT [GO]: keyscan.py's physical-memory steps
# (neither is given the key; see keyscan.py).
@test "after the run the key is in none of the guest's former pages of physical memory (/proc/kcore); a kill -9 leaves it there" {
	need_kvm; need_root
	[ -r /proc/kcore ] || skip "no /proc/kcore on this kernel (CONFIG_PROC_KCORE; the SVM tier's kernels have it)"
	local backend control
	backend=${CLOAK_TEST_MEMORY:-$(auto_backend)}
	[ "$backend" != none ] || backend=shared
	if [ "$backend" = gmem ] && gmem_gives_up; then
		skip "the monitor gives guest_memfd memory up at PROTECT, so it cannot name the private pages: t5 scans all of RAM after the run"
	fi
	# The controls need pages the kernel neither hides nor zeroes when
	# they are freed: secret memory is out of the direct map and zeroed.
	control=$backend
	[ "$control" != secret ] || control=shared
	new_key id
	# The run: the key added, the agent stopped the usual way (the wipe).
	start_agent --memory="$backend"
	c ssh-add -q "$TMP/id"
	sign_verify "$TMP/id.pub"
	run "$SCAN" guest-pfns "$AGENT_PID" "$TMP/pfns"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	stop_agent
	run "$SCAN" kcore-dump "$TMP/pfns" "$TMP/after.bin"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	# Control: the same steps find the key while a --memory=$control agent
	# holds it, and after a kill -9, which skips the wipe.
	rm -f "$TMP/shared.dump"
	start_agent --memory="$control"
	c ssh-add -q "$TMP/id"
	sign_verify "$TMP/id.pub"
	"$SCAN" guest-pfns "$AGENT_PID" "$TMP/cpfns"
	"$SCAN" kcore-dump "$TMP/cpfns" "$TMP/during.bin"
	"$SCAN" kcore-dump "$TMP/cpfns" "$TMP/killed.bin" "$TMP/go" >"$TMP/dump.out" 2>&1 &
	local dumper=$!
	sleep 1
	kill -9 "$AGENT_PID"
	wait "$AGENT_PID" || true
	AGENT_PID=
	: >"$TMP/go"
	wait "$dumper" || { cat "$TMP/dump.out"; return 1; }
	local d
	d=$("$SCAN" scalar "$TMP/id")
	run "$SCAN" key "$d" "$TMP/during.bin"
	[ "$status" -eq 1 ] || { echo "control: the running agent's pages do not show the key: $output"; return 1; }
	run "$SCAN" key "$d" "$TMP/killed.bin"
	[ "$status" -eq 1 ] || { echo "control: the key is gone after kill -9 too ($(cat "$TMP/dump.out")): $output"; return 1; }
	run "$SCAN" key "$d" "$TMP/after.bin"
	[ "$status" -eq 0 ] || { echo "after the run: $output"; return 1; }
}

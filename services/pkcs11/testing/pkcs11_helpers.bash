# SPDX-License-Identifier: ISC
# The PKCS#11 token's suites (pkcs11*.bats): the module, the guest, the
# PINs, pkcs11-tool on the module, and the in-memory token started straight
# under cloak. Loaded after helpers.bash (ROOT, O, CLOAK, TMP, need_kvm).
MODULE=$ROOT/$O/pkcs11/libcloak-pkcs11.so
P11_ELF=$ROOT/$O/services/pkcs11.elf
SO_PIN=87654321
PIN=123456
SOFTHSM=/usr/lib/softhsm/libsofthsm2.so

# p11 ARGS...: pkcs11-tool on the module, bounded in time.
p11() {
	timeout 120 pkcs11-tool --module "$MODULE" "$@"
}

# start_memory_token [MONITOR-ARGS...]: the token guest in memory only, on
# an owner-only socket $SOCK; TOKEN_PID is the monitor; exports
# CLOAK_PKCS11_SOCKET.
start_memory_token() {
	need_kvm
	SOCK=$TMP/token.sock
	(umask 077; exec "$CLOAK" --timeout=900 "$@" --channel p11=listen:"$SOCK" "$P11_ELF") \
		> "$TMP/monitor.out" 2>&1 &
	TOKEN_PID=$!
	wait_for_line "$TOKEN_PID" "$TMP/monitor.out" '^pkcs11: ready' || return 1
	export CLOAK_PKCS11_SOCKET=$SOCK
}

# start_host_token: the token's request handler as a host process
# (p11_host_token: no VM, nothing protected, objects in memory only) on an
# owner-only socket $SOCK, for what the module does rather than what the
# guest protects; TOKEN_PID is it; exports CLOAK_PKCS11_SOCKET.
start_host_token() {
	SOCK=$TMP/token.sock
	(umask 077; exec "$ROOT/$O/tests/p11_host_token" "$SOCK") > "$TMP/host-token.out" 2>&1 &
	TOKEN_PID=$!
	wait_for_line "$TOKEN_PID" "$TMP/host-token.out" '^p11_host_token: ready' || return 1
	export CLOAK_PKCS11_SOCKET=$SOCK
}

# init_token: label "cloak-test", the SO and user PINs above.
init_token() {
	p11 --init-token --label cloak-test --so-pin "$SO_PIN" || return 1
	p11 --login --login-type so --so-pin "$SO_PIN" --init-pin --new-pin "$PIN"
}

# start_with_peer: the in-memory token (label cloak-test) and, beside it,
# a SoftHSM2 token (label peer, Debian's $SOFTHSM, its own SOFTHSM2_CONF
# in $TMP), each initialised with the same SO and user PINs: the suites
# that run one thing on both and compare.
start_with_peer() {
	start_memory_token || return 1
	init_token > /dev/null 2>&1 || return 1
	mkdir "$TMP/softhsm"
	printf 'directories.tokendir = %s\nobjectstore.backend = file\n' "$TMP/softhsm" > "$TMP/softhsm.conf"
	export SOFTHSM2_CONF=$TMP/softhsm.conf
	timeout 60 pkcs11-tool --module "$SOFTHSM" --init-token --slot-index 0 --label peer \
		--so-pin "$SO_PIN" > /dev/null 2>&1 || return 1
	timeout 60 pkcs11-tool --module "$SOFTHSM" --token-label peer --login --login-type so \
		--so-pin "$SO_PIN" --init-pin --new-pin "$PIN" > /dev/null 2>&1
}

# on NAME ARGS...: pkcs11-tool logged in on the token NAME (cloak or
# softhsm, start_with_peer's), bounded in time.
on() {
	local name=$1
	shift
	case $name in
	cloak) timeout 120 pkcs11-tool --module "$MODULE" --token-label cloak-test --login --pin "$PIN" "$@" ;;
	softhsm) timeout 120 pkcs11-tool --module "$SOFTHSM" --token-label peer --login --pin "$PIN" "$@" ;;
	esac
}

# pubkey_pem ID: the token's public key ID as PEM in $TMP/pubID.pem (by
# way of $TMP/pubID.der).
pubkey_pem() {
	p11 --read-object --type pubkey --id "$1" -o "$TMP/pub$1.der" || return 1
	openssl pkey -pubin -inform DER -in "$TMP/pub$1.der" -out "$TMP/pub$1.pem"
}

# output_has LINE...: each LINE is a whole line of $output (the last run's).
output_has() {
	local line
	for line in "$@"; do
		grep -qxF "$line" <<< "$output" || { echo "missing '$line' in:"; echo "$output"; return 1; }
	done
}

# at_once N FUNC: FUNC 1 .. FUNC N, all at once, each one's output in
# $TMP/outI; fails, printing its output, if any of them fails.
at_once() {
	local i pids=()
	for i in $(seq "$1"); do
		"$2" "$i" > "$TMP/out$i" 2>&1 &
		pids+=($!)
	done
	for i in "${!pids[@]}"; do
		wait "${pids[$i]}" || { cat "$TMP/out$((i + 1))"; return 1; }
	done
}

# SPDX-License-Identifier: ISC
# The PKCS#11 token's suites (pkcs11*.bats): the module, the guest, the
# PINs, pkcs11-tool on the module, and the in-memory token started straight
# under cloak. Loaded after helpers.bash (ROOT, O, CLOAK, TMP, need_kvm).
MODULE=$ROOT/$O/pkcs11/libcloak-pkcs11.so
P11_ELF=$ROOT/$O/services/pkcs11.elf
SO_PIN=87654321
PIN=123456

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

# init_token: label "cloak-test", the SO and user PINs above.
init_token() {
	p11 --init-token --label cloak-test --so-pin "$SO_PIN" || return 1
	p11 --login --login-type so --so-pin "$SO_PIN" --init-pin --new-pin "$PIN"
}

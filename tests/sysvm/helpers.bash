# SPDX-License-Identifier: ISC
# Shared by the system VM suite's tests (tests/sysvm/*.bats). They run as
# root inside the VM, a systemd Debian 13, by tests/sysvm/in-sysvm; what a
# user does runs as that user in a login session (as_user).

# The ordinary user whose session runs the user units (made by in-sysvm:
# lingering, and logged in through sshd on loopback for each command).
SYSVM_USER=alice
# What the tests keep between tests and across the reboot (on the VM's
# disk, thrown away with it).
STATE=/var/lib/cloak-sysvm
# The packages under test, and the same one version later.
DEBS=/srv/debs/now
NEXT_DEBS=/srv/debs/next
# p11-kit's proxy module: every module p11-kit knows, by name.
P11_PROXY=/usr/lib/x86_64-linux-gnu/p11-kit-proxy.so

# What the packages provide (docs/packaging.md): the units, where the
# stores live, the credential that holds a system token's PIN.
AGENT_SOCKET=cloak-ssh-agent.socket
AGENT_SERVICE=cloak-ssh-agent.service
USER_TOKEN=cloak-pkcs11.service
USER_TOKEN_SOCKET=cloak-pkcs11.socket
# A server's token, instance NAME: cloak-pkcs11@NAME.service, its socket
# /run/cloak-pkcs11/NAME.sock for the members of group cloak-pkcs11, its
# store under /var/lib/cloak-pkcs11/NAME/, its user PIN the credential
# cloak-pkcs11-NAME.pin.
SYSTEM_TOKEN=cloak-pkcs11@
SYSTEM_STORES=/var/lib/cloak-pkcs11
SYSTEM_SOCKETS=/run/cloak-pkcs11
TOKEN_GROUP=cloak-pkcs11
CREDSTORE=/etc/credstore.encrypted

# as_user SCRIPT: runs SCRIPT with bash as $SYSVM_USER in a new login
# session (sshd on 127.0.0.1, PAM and pam_systemd as for any login; a
# login shell, so /etc/profile.d runs), with `set -u`. Its output is the
# script's, its status the script's.
as_user() {
	ssh -q -F none -i "$STATE/login-key" -o IdentitiesOnly=yes -o BatchMode=yes \
		-o UserKnownHostsFile="$STATE/known_hosts" -o StrictHostKeyChecking=accept-new \
		-o ConnectTimeout=60 -T "$SYSVM_USER@127.0.0.1" 'exec bash -l -s' <<<"set -u
$1"
}

# journal_since UNIT CURSOR-FILE: the journal lines of UNIT (a system unit)
# since the cursor saved in CURSOR-FILE (journal_mark).
journal_mark() { journalctl -n 0 --show-cursor -q | sed -n 's/^-- cursor: //p' >"$1"; }
journal_since() { journalctl -q -o cat -u "$1" --after-cursor="$(cat "$2")" --no-pager; }

# wait_active UNIT [SECONDS]: waits (default 120 s) until the system unit
# UNIT is active; fails saying what it is instead.
wait_active() {
	local i
	for ((i = 0; i < ${2:-120} * 2; i++)); do
		[ "$(systemctl is-active "$1")" = active ] && return 0
		sleep 0.5
	done
	echo "$1 is $(systemctl is-active "$1") after ${2:-120} s:"
	systemctl status --no-pager -n 20 "$1"
	return 1
}

# wait_settled UNIT [SECONDS]: waits until UNIT is neither activating nor
# deactivating, then prints its state; a start that hangs fails here.
wait_settled() {
	local i st
	for ((i = 0; i < ${2:-120} * 2; i++)); do
		st=$(systemctl is-active "$1")
		case $st in activating | deactivating | reloading) sleep 0.5 ;; *) echo "$st"; return 0 ;; esac
	done
	echo "$1 still $st after ${2:-120} s"
	return 1
}

# The server of server-setup.bats and server.bats: token instance web,
# nginx serving https://127.0.0.1:$WEB_PORT/ with the token's key "web".
WEB=web
WEB_PIN=web-pin-4711
WEB_SO_PIN=web-so-pin-4711
WEB_PORT=8443
WEB_SOCKET=$SYSTEM_SOCKETS/$WEB.sock
# nginx's own files (docs/packaging.md, "Clients: nginx"): its PIN is its
# own systemd credential, the same encrypted file the token's unit loads
# (readable by nginx's master, root, alone); the certificate the token
# signed; the OpenSSL configuration that loads libp11's engine.
WEB_PIN_FILE=/run/credentials/nginx.service/cloak-pkcs11-$WEB.pin
WEB_CERT=/etc/nginx/cloak-$WEB.crt
WEB_OPENSSL_CONF=/etc/nginx/pkcs11-openssl.cnf
WEB_KEY_URI="pkcs11:token=$WEB;object=$WEB;type=private"

# fetch COUNT [CURL-ARGS...]: COUNT requests to nginx, each on a new
# connection with a full handshake, the certificate verified against the
# one the token signed; prints one body line each.
fetch() {
	local count=$1 urls=() i
	shift
	for ((i = 0; i < count; i++)); do urls+=("https://127.0.0.1:$WEB_PORT/"); done
	timeout 600 curl -s -S --max-time 60 --no-sessionid -H 'Connection: close' \
		--cacert "$WEB_CERT" "$@" "${urls[@]}"
}

# p11_web ARGS...: pkcs11-tool on the server's token, through p11-kit's
# proxy module, as root.
p11_web() {
	CLOAK_PKCS11_SOCKET=$WEB_SOCKET timeout 300 pkcs11-tool --module "$P11_PROXY" --token-label "$WEB" "$@"
}

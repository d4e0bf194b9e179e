#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# A server's token set up as an administrator sets it up (cloak-pkcs11@NAME,
# docs/packaging.md): its store under /var/lib, its user PIN a systemd
# credential (encrypted), the unit enabled; a key made in it and a
# certificate signed by it; nginx configured to serve with that key, its
# PIN in a file only nginx's user reads and none in its configuration,
# started after the token. The VM then reboots: server.bats checks what
# runs after the boot with no one there. As root, first boot.
bats_require_minimum_version 1.5.0
load helpers

@test "a server's token: cloak-pkcs11 init under /var/lib, its PIN an encrypted credential, enabled and started" {
	run bash -c "printf '%s\n%s\n' $WEB_SO_PIN $WEB_PIN |
		cloak-pkcs11 init -s $SYSTEM_STORES/$WEB/token.img --label $WEB 2>&1"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	mkdir -p "$CREDSTORE"
	# The PIN with no final newline (libp11 would take it as part of it).
	printf '%s' "$WEB_PIN" | systemd-creds encrypt - "$CREDSTORE/cloak-pkcs11-$WEB.pin"
	# Encrypted: the PIN is not in the file.
	run ! grep -qF "$WEB_PIN" "$CREDSTORE/cloak-pkcs11-$WEB.pin"
	run systemctl enable --now "$SYSTEM_TOKEN$WEB.service"
	[ "$status" -eq 0 ] || { echo "$output"; systemctl status --no-pager "$SYSTEM_TOKEN$WEB.service"; return 1; }
	wait_active "$SYSTEM_TOKEN$WEB.service"
	[ "$(systemctl is-enabled "$SYSTEM_TOKEN$WEB.service")" = enabled ]
	# The store is the token user's alone; its socket is the token group's.
	[ "$(stat -c '%U %a' "$SYSTEM_STORES/$WEB")" = "$(systemctl show -p User --value "$SYSTEM_TOKEN$WEB.service") 700" ]
	[ "$(stat -c '%G %a' "$WEB_SOCKET")" = "$TOKEN_GROUP 660" ]
}

@test "a key made in the server's token and a certificate it signed (libp11's engine, through p11-kit)" {
	run p11_web --login --pin "$WEB_PIN" --keypairgen --key-type EC:prime256v1 --id 01 --label "$WEB"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	# libp11's engine on cloak's module, loaded and initialised for nginx
	# (which loads keys from an engine it does not initialise itself).
	local module
	module=$(sed -n 's/^module: *//p' /usr/share/p11-kit/modules/cloak-pkcs11.module)
	[ -f "$module" ]
	cat >"$WEB_OPENSSL_CONF" <<-CNF
	openssl_conf = openssl_init
	[openssl_init]
	engines = engine_section
	[engine_section]
	pkcs11 = pkcs11_section
	[pkcs11_section]
	engine_id = pkcs11
	MODULE_PATH = $module
	init = 1
	CNF
	# The certificate, signed by root with the token's PIN from a file of
	# root's for this once.
	install -m 600 /dev/null "$BATS_TEST_TMPDIR/pin"
	printf '%s' "$WEB_PIN" >"$BATS_TEST_TMPDIR/pin"
	run env CLOAK_PKCS11_SOCKET="$WEB_SOCKET" OPENSSL_CONF="$WEB_OPENSSL_CONF" timeout 300 openssl req -x509 \
		-engine pkcs11 -keyform engine -key "$WEB_KEY_URI?pin-source=file:$BATS_TEST_TMPDIR/pin" -new \
		-subj /CN=localhost -addext subjectAltName=IP:127.0.0.1 -days 30 -out "$WEB_CERT"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	# The certificate carries the token's public key.
	p11_web --read-object --type pubkey --id 01 -o "$STATE/web-pub.der"
	cmp <(openssl pkey -pubin -inform DER -in "$STATE/web-pub.der") <(openssl x509 -in "$WEB_CERT" -noout -pubkey)
}

@test "nginx is set to serve with the token's key: in its group, after it, restarted with it, its PIN its own credential, none in its configuration; it serves" {
	usermod -a -G "$TOKEN_GROUP" www-data
	# docs/packaging.md, "Clients: nginx": the drop-in an administrator
	# writes with systemctl edit nginx.service.
	mkdir -p /etc/systemd/system/nginx.service.d
	cat >/etc/systemd/system/nginx.service.d/cloak-pkcs11.conf <<-UNIT
	[Unit]
	After=$SYSTEM_TOKEN$WEB.service
	Wants=$SYSTEM_TOKEN$WEB.service
	PartOf=$SYSTEM_TOKEN$WEB.service
	[Service]
	LoadCredentialEncrypted=cloak-pkcs11-$WEB.pin
	Environment=CLOAK_PKCS11_SOCKET=$WEB_SOCKET OPENSSL_CONF=$WEB_OPENSSL_CONF
	UNIT
	# The two variables kept for the workers.
	grep -q '^env CLOAK_PKCS11_SOCKET;' /etc/nginx/nginx.conf ||
		sed -i '/^pid /a env CLOAK_PKCS11_SOCKET;\nenv OPENSSL_CONF;' /etc/nginx/nginx.conf
	echo "hello from the token's key" >/var/www/html/cloak.txt
	cat >/etc/nginx/sites-enabled/cloak-$WEB <<-SITE
	server {
		listen 127.0.0.1:$WEB_PORT ssl;
		root /var/www/html;
		index cloak.txt;
		ssl_protocols TLSv1.2 TLSv1.3;
		ssl_certificate $WEB_CERT;
		ssl_certificate_key "engine:pkcs11:$WEB_KEY_URI?pin-source=file:$WEB_PIN_FILE";
	}
	SITE
	systemctl daemon-reload
	run systemctl restart nginx.service
	[ "$status" -eq 0 ] || { echo "$output"; journalctl -u nginx.service -n 20 --no-pager; return 1; }
	[ "$(fetch 1)" = "hello from the token's key" ]
	# No PIN in nginx's configuration; its credential is root's alone.
	run grep -rlF "$WEB_PIN" /etc/nginx /etc/systemd/system
	[ "$status" -eq 1 ] || { echo "$output"; return 1; }
	[ "$(stat -c '%U %a' "$WEB_PIN_FILE")" = "root 400" ] || { stat "$WEB_PIN_FILE"; return 1; }
}

#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The Debian packages (docs/packaging.md), built as a user builds them: a
# clean clone of the tree's HEAD, `dpkg-buildpackage -us -uc -b` with no
# network. Then what each package holds, lintian, systemd-analyze verify
# of every unit, the libraries, pkg-config files, p11-kit registration and
# session glue used from the packages (over this host's /usr in a mount
# namespace of their own: the host is not changed), and, in a Debian
# trixie root, dpkg itself: the packages installed, trixie's lintian and
# systemd-analyze, and the maintainer scripts (an upgrade restarts the
# running tokens and keeps their stores; remove keeps them; only purge
# removes them). The services running under systemd, booted: the SVM
# tier's systemd VM suite. As root. `make check-packages`.
bats_require_minimum_version 1.5.0
load helpers

setup_file() {
	[ "$(id -u)" -eq 0 ] || return 0 # every test skips, saying why
	export PKG_VERSION DEBS X BUILD_SECONDS
	PKG_VERSION=$(dpkg-parsechangelog -l "$ROOT/debian/changelog" -S Version)
	local work=$BATS_FILE_TMPDIR
	git clone -q "$ROOT" "$work/src"
	# The build, under an exclusive lock of the build directory's
	# packages.lock: the system VM suite (tests/sysvm/build-debs) waits for
	# it, then takes these packages if they are of its tree (below).
	local shared=${CLOAK_BUILD_DIR:-$ROOT/build}/packages lock
	mkdir -p "${shared%/*}"
	exec {lock}>"$shared.lock"
	flock -x "$lock"
	rm -rf "$shared"
	local t0=$SECONDS
	# No network: unshare -n leaves the build a namespace with none.
	(cd "$work/src" && DEB_BUILD_OPTIONS="parallel=$(nproc)" unshare -n \
		dpkg-buildpackage -us -uc -b) > "$work/build.log" 2>&1 ||
		{ tail -40 "$work/build.log" >&3; exec {lock}>&-; return 1; }
	BUILD_SECONDS=$((SECONDS - t0))
	echo "# dpkg-buildpackage took $BUILD_SECONDS s" >&3
	DEBS=$work/debs
	mkdir -p "$DEBS"
	mv "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$DEBS/"
	# For the system VM suite: the packages (no debug symbols), with the
	# commit they were built from, whole before they have their name.
	rm -rf "$shared.new"
	mkdir -p "$shared.new/now"
	local d
	for d in "$DEBS"/*.deb; do
		case $d in *-dbgsym_*) ;; *) cp "$d" "$shared.new/now/" ;; esac
	done
	git -C "$work/src" rev-parse HEAD >"$shared.new/commit"
	mv "$shared.new" "$shared"
	exec {lock}>&-
	X=$work/x
	mkdir -p "$X"
	for p in $PACKAGES; do dpkg-deb -x "$DEBS/${p}_${PKG_VERSION}_amd64.deb" "$X"; done
}

# files PACKAGE: what the package holds, one line each (not directories;
# the documentation directory, which dh_installdocs fills, apart),
# links as "PATH -> TARGET".
files() {
	dpkg-deb -c "$(deb "$1")" | awk '$1 !~ /^d/ { sub(/^\.\//, "", $6); l = $6
		if ($7 == "->") l = l " -> " $8; print l }' | grep -v '^usr/share/doc/' | sort
}

@test "one version: debian/changelog, the Makefile and the packages agree" {
	need_root
	grep -qx "VERSION := $PKG_VERSION" "$ROOT/Makefile"
	for p in $PACKAGES; do
		[ "$(dpkg-deb -f "$(deb "$p")" Version)" = "$PKG_VERSION" ] || { echo "$p"; return 1; }
	done
}

@test "dpkg-buildpackage -us -uc -b builds the eight packages from a clean clone with no network" {
	need_root
	local got want
	got=$(cd "$DEBS" && ls ./*.deb | sed 's|^\./||; s/_.*//' | grep -v -- '-dbgsym$' | sort)
	want=$(printf '%s\n' $PACKAGES | sort)
	[ "$got" = "$want" ] || { diff <(echo "$want") <(echo "$got"); return 1; }
	[ -n "$BUILD_SECONDS" ]
}

@test "the monitor, with its man page" {
	need_root
	run files cloak
	[ "$output" = "usr/bin/cloak
usr/lib/udev/rules.d/60-cloak-kvm.rules
usr/share/lintian/overrides/cloak
usr/share/man/man1/cloak.1.gz" ] || { echo "$output"; return 1; }
	run "$X/usr/bin/cloak" --version
	[ "$status" -eq 0 ] && [[ "$output" == *"$PKG_VERSION"* ]] || { echo "$output"; return 1; }
}

@test "the guest runtime: headers, link scripts, start object and cloak-guest.pc" {
	need_root
	run files cloak-guest-dev
	[ "$output" = "usr/include/cloak/abi.h
usr/lib/cloak/guest.ld
usr/lib/cloak/idt.ld
usr/lib/cloak/include/assert.h
usr/lib/cloak/include/cloak/abi.h
usr/lib/cloak/include/cloak/block.h
usr/lib/cloak/include/cloak/channel.h
usr/lib/cloak/include/cloak/format.h
usr/lib/cloak/include/cloak/guest.h
usr/lib/cloak/include/cloak/heap.h
usr/lib/cloak/include/ctype.h
usr/lib/cloak/include/errno.h
usr/lib/cloak/include/stdio.h
usr/lib/cloak/include/stdlib.h
usr/lib/cloak/include/string.h
usr/lib/cloak/libcloakrt.a
usr/lib/cloak/start.o
usr/lib/x86_64-linux-gnu/pkgconfig/cloak-guest.pc
usr/share/lintian/overrides/cloak-guest-dev" ] || { echo "$output"; return 1; }
}

@test "libcloak: the library by its soname, the two preload libraries, and a -dev package with header, .a, cloak.pc and the man pages" {
	need_root
	[ "$(files libcloak0)" = "usr/lib/x86_64-linux-gnu/libcloak.so.0" ]
	[ "$(files libcloak-sodium0)" = "usr/lib/x86_64-linux-gnu/libcloak-sodium.so.0" ]
	[ "$(files libcloak-openssl0)" = "usr/lib/x86_64-linux-gnu/libcloak-openssl.so.0" ]
	local lib
	for lib in libcloak libcloak-sodium libcloak-openssl; do
		run readelf -d "$X/usr/lib/x86_64-linux-gnu/$lib.so.0"
		[[ "$output" == *"(SONAME)"*"[$lib.so.0]"* ]] || { echo "$lib: $output"; return 1; }
	done
	run files libcloak-dev
	local man3 m
	man3=$(cd "$ROOT/man" && ls libcloak*.3 cloak_secret*.3 | sort)
	for m in $man3; do
		[[ "$output" == *"usr/share/man/man3/$m.gz"* ]] || { echo "no $m: $output"; return 1; }
	done
	# Everything but the man pages, exactly.
	[ "$(grep -v '^usr/share/man/man3/' <<< "$output")" = "usr/include/cloak/secret.h
usr/lib/x86_64-linux-gnu/libcloak-openssl.so -> libcloak-openssl.so.0
usr/lib/x86_64-linux-gnu/libcloak-sodium.so -> libcloak-sodium.so.0
usr/lib/x86_64-linux-gnu/libcloak.a
usr/lib/x86_64-linux-gnu/libcloak.so -> libcloak.so.0
usr/lib/x86_64-linux-gnu/pkgconfig/cloak.pc" ] || { echo "$output"; return 1; }
	[ "$(dpkg-deb -f "$(deb libcloak-dev)" Depends)" = "libcloak-openssl0 (= $PKG_VERSION), libcloak-sodium0 (= $PKG_VERSION), libcloak0 (= $PKG_VERSION)" ]
}

@test "libcloak0's symbols file: exactly what libcloak.so.0 exports, each under a version node of libcloak.map (docs/libcloak.md, API stability)" {
	need_root
	local ctl=$BATS_TEST_TMPDIR/ctl listed exported nodes
	dpkg-deb -e "$(deb libcloak0)" "$ctl"
	listed=$(awk '/^ / { print $1 }' "$ctl/symbols" | sort)
	exported=$(nm -D --defined-only "$X/usr/lib/x86_64-linux-gnu/libcloak.so.0" |
		awk '{ if ($3 !~ /@/) $3 = $3 "@" $3; sub(/@@/, "@", $3); print $3 }' | sort)
	[ "$listed" = "$exported" ] || { diff <(echo "$exported") <(echo "$listed"); return 1; }
	# Every symbol's node is one libcloak.map defines; every function is
	# cloak_secret_*.
	nodes=$(sed -n 's/^\(CLOAK_[0-9.]*\) *{.*/\1/p' "$ROOT/libcloak/libcloak.map")
	[ -n "$nodes" ]
	while read -r sym; do
		grep -qx "${sym#*@}" <<< "$nodes" || { echo "$sym: not a node of libcloak.map"; return 1; }
		[[ ${sym%@*} == cloak_secret_* || ${sym%@*} == "${sym#*@}" ]] || { echo "$sym"; return 1; }
	done <<< "$listed"
	grep -q '^libcloak.so.0 libcloak0 #MINVER#$' "$ctl/symbols"
	# The two preload libraries have theirs too.
	for p in libcloak-sodium0 libcloak-openssl0; do
		dpkg-deb -e "$(deb "$p")" "$ctl.$p"
		[ -s "$ctl.$p/symbols" ] || { echo "$p: no symbols file"; return 1; }
	done
}

@test "the SSH agent: launcher, guest image, cloak-ssh-keygen, user units, SSH_AUTH_SOCK glue" {
	need_root
	run files cloak-ssh-agent
	[ "$output" = "etc/profile.d/cloak-ssh-agent.sh
usr/bin/cloak-ssh-agent
usr/bin/cloak-ssh-keygen
usr/lib/cloak/ssh-agent.elf
usr/lib/systemd/user-environment-generators/90cloak-ssh-agent
usr/lib/systemd/user/cloak-ssh-agent.service
usr/lib/systemd/user/cloak-ssh-agent.socket
usr/share/lintian/overrides/cloak-ssh-agent
usr/share/man/man1/cloak-ssh-agent.1.gz
usr/share/man/man1/cloak-ssh-keygen.1.gz" ] || { echo "$output"; return 1; }
	[[ "$(dpkg-deb -f "$(deb cloak-ssh-agent)" Depends)" == "cloak (= $PKG_VERSION), "* ]]
	[ -x "$X/usr/lib/systemd/user-environment-generators/90cloak-ssh-agent" ]
	local ctl=$BATS_TEST_TMPDIR/ctl
	dpkg-deb -e "$(deb cloak-ssh-agent)" "$ctl"
	grep -qx /etc/profile.d/cloak-ssh-agent.sh "$ctl/conffiles"
}

@test "the PKCS#11 token: launcher, guest image, the module registered with p11-kit, user and system units, its system user" {
	need_root
	run files cloak-pkcs11
	[ "$output" = "usr/bin/cloak-pkcs11
usr/lib/cloak/pkcs11.elf
usr/lib/systemd/system/cloak-pkcs11@.service
usr/lib/systemd/system/cloak-pkcs11@.socket
usr/lib/systemd/user/cloak-pkcs11.service
usr/lib/systemd/user/cloak-pkcs11.socket
usr/lib/sysusers.d/cloak-pkcs11.conf
usr/lib/x86_64-linux-gnu/pkcs11/libcloak-pkcs11.so
usr/share/lintian/overrides/cloak-pkcs11
usr/share/man/man1/cloak-pkcs11.1.gz
usr/share/p11-kit/modules/cloak-pkcs11.module" ] || { echo "$output"; return 1; }
	grep -qx 'module: /usr/lib/x86_64-linux-gnu/pkcs11/libcloak-pkcs11.so' \
		"$X/usr/share/p11-kit/modules/cloak-pkcs11.module"
	[[ "$(dpkg-deb -f "$(deb cloak-pkcs11)" Depends)" == "cloak (= $PKG_VERSION), python3, "* ]]
}

@test "the guest images in the packages are the monitor's: accepted (249 without KVM), booted where KVM is" {
	need_root
	local g
	for g in ssh-agent pkcs11; do
		run timeout 60 "$X/usr/bin/cloak" --timeout=20 "$X/usr/lib/cloak/$g.elf"
		# A refused image is 250; without /dev/kvm the monitor stops
		# after checking it (249).
		[ "$status" -ne 250 ] || { echo "$g: $output"; return 1; }
		[ -c /dev/kvm ] || [ "$status" -eq 249 ] || { echo "$g: $status: $output"; return 1; }
	done
}

@test "lintian (this host's Debian): no error, no warning, no override unused; every override says why" {
	need_root
	command -v lintian > /dev/null || skip "no lintian: apt-get install lintian"
	run lintian --fail-on error,warning --info --pedantic "$DEBS/cloak_${PKG_VERSION}_amd64.changes"
	echo "$output" > "$BATS_FILE_TMPDIR/lintian.out"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	run ! grep -E '^[EW]: |unused-override|mismatched-override' <<< "$output"
	local f
	for f in "$ROOT"/debian/*.lintian-overrides; do
		awk '!/^#/ && $0 != "" && prev !~ /^#/ { print FILENAME ": " $0 } { prev = $0 }' "$f" \
			> "$BATS_TEST_TMPDIR/bare"
		[ ! -s "$BATS_TEST_TMPDIR/bare" ] || { echo "override without a reason above it:"; cat "$BATS_TEST_TMPDIR/bare"; return 1; }
	done
}

# verify_units UNIT...: systemd-analyze verify of the packaged units with
# the packages over /usr (ExecStart= must name programs that exist there).
verify_units() {
	mkdir -p "$BATS_TEST_TMPDIR/run"
	with_packages env XDG_RUNTIME_DIR="$BATS_TEST_TMPDIR/run" SYSTEMD_PAGER= \
		sh -c 'cd /usr/lib/systemd && systemd-analyze "$@"' _ "$@" 2>&1
}

@test "systemd-analyze verify (this host's systemd): every unit clean; a broken copy is not" {
	need_root
	run verify_units verify system/cloak-pkcs11@.service system/cloak-pkcs11@.socket
	[ "$status" -eq 0 ] && [ -z "$output" ] || { echo "$output"; return 1; }
	run verify_units --user verify user/cloak-ssh-agent.socket user/cloak-ssh-agent.service \
		user/cloak-pkcs11.socket user/cloak-pkcs11.service
	[ "$status" -eq 0 ] && [ -z "$output" ] || { echo "$output"; return 1; }
	# The control: the agent's service naming a monitor that is not there.
	sed 's|/usr/bin/cloak |/usr/bin/cloak-absent |' "$X/usr/lib/systemd/user/cloak-ssh-agent.service" \
		> "$BATS_TEST_TMPDIR/cloak-ssh-agent.service"
	cp "$X/usr/lib/systemd/user/cloak-ssh-agent.socket" "$BATS_TEST_TMPDIR/"
	run verify_units --user verify "$BATS_TEST_TMPDIR/cloak-ssh-agent.service"
	[ "$status" -ne 0 ] && [[ "$output" == *"cloak-absent"* ]] || { echo "$output"; return 1; }
}

# unit_keys FILE SECTION: the KEY=VALUE lines of SECTION.
unit_keys() {
	awk -v s="[$2]" '/^\[/ { on = ($0 == s); next } on && /^[A-Za-z]+=/' "$1"
}

@test "the units run the packaged monitor on the socket systemd passes (fd:3), under the names the guests open; a stop (SIGTERM, 240) is a clean end" {
	need_root
	local u=$X/usr/lib/systemd
	grep -q 'CHANNEL "agent"' "$ROOT/services/ssh-agent/guest/main.c"
	grep -q 'CHANNEL "p11"' "$ROOT/services/pkcs11/guest/main.c"
	unit_keys "$u/user/cloak-ssh-agent.service" Service | grep -qx \
		'ExecStart=/usr/bin/cloak $CLOAK_ARGS --channel agent=fd:3 /usr/lib/cloak/ssh-agent.elf'
	unit_keys "$u/user/cloak-pkcs11.service" Service | grep -qx \
		'ExecStart=/usr/bin/cloak $CLOAK_ARGS --block store=${CLOAK_PKCS11_STORE} --channel p11=fd:3 /usr/lib/cloak/pkcs11.elf'
	unit_keys "$u/system/cloak-pkcs11@.service" Service | grep -qx \
		'ExecStart=/usr/bin/cloak $CLOAK_ARGS --block store=%S/cloak-pkcs11/%i/token.img --channel p11=fd:3 /usr/lib/cloak/pkcs11.elf'
	[ "$(unit_keys "$u/user/cloak-ssh-agent.socket" Socket | grep ListenStream)" = 'ListenStream=%t/cloak-ssh-agent/socket' ]
	[ "$(unit_keys "$u/user/cloak-pkcs11.socket" Socket | grep ListenStream)" = 'ListenStream=%t/cloak-pkcs11/token.sock' ]
	[ "$(unit_keys "$u/system/cloak-pkcs11@.socket" Socket | grep ListenStream)" = 'ListenStream=%t/cloak-pkcs11/%i.sock' ]
	local s
	for s in user/cloak-ssh-agent.service user/cloak-pkcs11.service system/cloak-pkcs11@.service; do
		unit_keys "$u/$s" Service | grep -qx 'SuccessExitStatus=240' || { echo "$s"; return 1; }
		# One socket each: systemd passes it as descriptor 3.
		[ "$(grep -c '^ListenStream=' "$u/${s%.service}.socket")" -eq 1 ]
	done
	# 240 is the monitor's status for a stop by a signal.
	grep -q '^	X(240, INTERRUPTED, "stopped by a signal: SIGTERM' "$ROOT/monitor/exit_status.h"
}

@test "the system token: its own user, /dev/kvm alone, a read-only system but its store, the PIN from a credential; every directive with its reason" {
	need_root
	local unit=$X/usr/lib/systemd/system/cloak-pkcs11@.service keys
	keys=$(unit_keys "$unit" Service)
	local want
	for want in User=_cloak-pkcs11 'SupplementaryGroups=kvm cloak-pkcs11' DevicePolicy=closed 'DeviceAllow=/dev/kvm rw' \
		NoNewPrivileges=yes ProtectSystem=strict PrivateTmp=yes LimitMEMLOCK=128M \
		StateDirectory=cloak-pkcs11/%i StateDirectoryMode=0700 \
		LoadCredentialEncrypted=cloak-pkcs11-%i.pin \
		'ExecStartPost=/usr/bin/cloak-pkcs11 check -p %d/cloak-pkcs11-%i.pin --main-pid $MAINPID' \
		Restart=on-abnormal RestrictAddressFamilies=AF_UNIX; do
		grep -qxF "$want" <<< "$keys" || { echo "missing $want"; return 1; }
	done
	# No Environment= or command line carries a PIN.
	run ! grep -iE 'pin-value|PIN=' "$unit"
	# At boot it waits for /dev/kvm, which the udev rule makes a device unit.
	unit_keys "$unit" Unit | grep -qx 'Wants=dev-kvm.device'
	unit_keys "$unit" Unit | grep -qx 'After=dev-kvm.device'
	grep -qx 'SUBSYSTEM=="misc", KERNEL=="kvm", TAG+="systemd"' "$X/usr/lib/udev/rules.d/60-cloak-kvm.rules"
	# Each directive opens or continues a group that a comment explains.
	awk '/^\[Service\]/ { on = 1; next } /^\[/ { on = 0 }
		on && /^[A-Za-z]+=/ && prev !~ /^#/ && prev !~ /^[A-Za-z]+=/ { print "no reason: " $0 }
		{ prev = $0 }' "$unit" > "$BATS_TEST_TMPDIR/bare"
	[ ! -s "$BATS_TEST_TMPDIR/bare" ] || { cat "$BATS_TEST_TMPDIR/bare"; return 1; }
	grep -q '^u _cloak-pkcs11 ' "$X/usr/lib/sysusers.d/cloak-pkcs11.conf"
	grep -q '^g cloak-pkcs11 ' "$X/usr/lib/sysusers.d/cloak-pkcs11.conf"
	unit_keys "$X/usr/lib/systemd/system/cloak-pkcs11@.socket" Socket | grep -qx 'SocketGroup=cloak-pkcs11'
	unit_keys "$X/usr/lib/systemd/system/cloak-pkcs11@.socket" Socket | grep -qx 'SocketMode=0660'
	# The start-up check (ExecStartPost) connects to the socket as the
	# service's user: that user is in the socket's group (without it, a
	# booted trixie answered EACCES and the unit failed to start).
	local group
	group=$(unit_keys "$X/usr/lib/systemd/system/cloak-pkcs11@.socket" Socket | sed -n 's/^SocketGroup=//p')
	[ -n "$group" ]
	grep '^SupplementaryGroups=' <<< "$keys" | tr -s ' =' '\n' | grep -qx "$group" ||
		{ echo "the service's user is not in the socket's group $group"; return 1; }
}

@test "SSH_AUTH_SOCK: the generator names the agent's socket for a user who enabled it, and for no one else; profile.d only where it listens and no agent is named" {
	need_root
	local gen=$X/usr/lib/systemd/user-environment-generators/90cloak-ssh-agent home=$BATS_TEST_TMPDIR/home
	local wants=$home/.config/systemd/user/sockets.target.wants
	mkdir -p "$wants" "$BATS_TEST_TMPDIR/run"
	run env -i HOME="$home" XDG_RUNTIME_DIR=/run/user/1000 "$gen"
	[ "$status" -eq 0 ] && [ -z "$output" ] || { echo "not enabled: $output"; return 1; }
	ln -s /usr/lib/systemd/user/cloak-ssh-agent.socket "$wants/cloak-ssh-agent.socket"
	run env -i HOME="$home" XDG_RUNTIME_DIR=/run/user/1000 "$gen"
	[ "$output" = "SSH_AUTH_SOCK=/run/user/1000/cloak-ssh-agent/socket" ] || { echo "enabled: $output"; return 1; }
	ln -s /dev/null "$home/.config/systemd/user/cloak-ssh-agent.socket"
	run env -i HOME="$home" XDG_RUNTIME_DIR=/run/user/1000 "$gen"
	[ -z "$output" ] || { echo "masked: $output"; return 1; }
	# Login shells.
	local prof=$X/etc/profile.d/cloak-ssh-agent.sh run=$BATS_TEST_TMPDIR/run
	run env -i XDG_RUNTIME_DIR="$run" sh -c '. "$1"; echo "${SSH_AUTH_SOCK-unset}"' _ "$prof"
	[ "$output" = unset ]
	mkdir -p "$run/cloak-ssh-agent"
	python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$run/cloak-ssh-agent/socket"
	run env -i XDG_RUNTIME_DIR="$run" sh -c '. "$1"; echo "${SSH_AUTH_SOCK-unset}"' _ "$prof"
	[ "$output" = "$run/cloak-ssh-agent/socket" ]
	run env -i XDG_RUNTIME_DIR="$run" SSH_AUTH_SOCK=/forwarded sh -c '. "$1"; echo "$SSH_AUTH_SOCK"' _ "$prof"
	[ "$output" = /forwarded ]
}

@test "cloak-guest-dev: pkg-config cloak-guest builds a guest the packaged monitor accepts (and boots where KVM is)" {
	need_root
	local pc=$X/usr/lib/x86_64-linux-gnu/pkgconfig g=$BATS_TEST_TMPDIR/guest.elf cflags libs
	cflags=$(PKG_CONFIG_PATH=$pc pkg-config --define-variable=prefix="$X/usr" --cflags cloak-guest)
	libs=$(PKG_CONFIG_PATH=$pc pkg-config --define-variable=prefix="$X/usr" --libs cloak-guest)
	[[ "$cflags" == *"-I$X/usr/lib/cloak/include"* ]] || { echo "$cflags"; return 1; }
	# shellcheck disable=SC2086 # pkg-config's flags are words
	cc $cflags -o "$g" "$ROOT/examples/hello/hello.c" $libs
	run timeout 60 "$X/usr/bin/cloak" --timeout=20 "$g"
	if [ -c /dev/kvm ]; then
		[[ "$output" == *"Hello from a cloak guest!"* ]] || [ "$status" -eq 249 ] || { echo "$status: $output"; return 1; }
	else
		[ "$status" -eq 249 ] || { echo "$status: $output"; return 1; }
	fi
}

@test "libcloak-dev: a program built with pkg-config cloak runs on libcloak.so.0 from libcloak0; the OpenSSL preload library gives OpenSSL secret memory" {
	need_root
	local pc=$X/usr/lib/x86_64-linux-gnu/pkgconfig lib=$X/usr/lib/x86_64-linux-gnu prog=$BATS_TEST_TMPDIR/use
	cat > "$prog.c" <<-'EOF'
	#include <cloak/secret.h>
	#include <stdio.h>
	int main(void)
	{
		unsigned char *k = cloak_secret_alloc(32);
		if (!k)
			return 1;
		k[0] = 1;
		cloak_secret_free(k);
		puts("a secret allocated and freed");
		return 0;
	}
	EOF
	# shellcheck disable=SC2046 # pkg-config's flags are words
	cc -o "$prog" "$prog.c" $(PKG_CONFIG_PATH=$pc pkg-config --define-variable=prefix="$X/usr" --cflags --libs cloak)
	run env LD_LIBRARY_PATH="$lib" ldd "$prog"
	[[ "$output" == *"libcloak.so.0 => $lib/libcloak.so.0"* ]] || { echo "$output"; return 1; }
	run env LD_LIBRARY_PATH="$lib" CLOAK_STATS=1 "$prog"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	# (The statistics line comes at exit, on stderr: in either order.)
	[[ "$output" == *"a secret allocated and freed"* ]] || { echo "$output"; return 1; }
	[[ "$output" == *"libcloak stats (pid "*"backend memfd_secret"* ]] || { echo "$output"; return 1; }
	run env LD_PRELOAD="$lib/libcloak-openssl.so.0" CLOAK_STATS=1 openssl rand -hex 8
	[[ "$output" == *"libcloak stats (pid "*"allocs"* ]] || { echo "$output"; return 1; }
}

@test "p11-kit finds libcloak-pkcs11.so by name; with no CLOAK_PKCS11_SOCKET the module calls the user's own token's socket" {
	need_root
	command -v p11-kit > /dev/null || skip "no p11-kit: apt-get install p11-kit"
	local run=$BATS_TEST_TMPDIR/run
	mkdir -p "$run/cloak-pkcs11"
	# A stand-in token: it records each connection and hangs up.
	python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(8); s.settimeout(60)
n = 0
try:
    while True:
        c, _ = s.accept(); n += 1; c.close()
        open(sys.argv[2], "w").write(str(n))
except OSError:
    pass' "$run/cloak-pkcs11/token.sock" "$BATS_TEST_TMPDIR/calls" &
	local fake=$!
	for _ in $(seq 100); do [ -S "$run/cloak-pkcs11/token.sock" ] && break; sleep 0.05; done
	run with_packages env -u CLOAK_PKCS11_SOCKET XDG_RUNTIME_DIR="$run" p11-kit list-modules
	kill "$fake" 2>/dev/null || true
	[[ "$output" == *"cloak-pkcs11"*"cloak guest token"* ]] || { echo "$output"; return 1; }
	[ "$(cat "$BATS_TEST_TMPDIR/calls" 2>/dev/null)" -ge 1 ] || { echo "the module never called the user's socket"; return 1; }
}

@test "in a Debian trixie root: dpkg installs the packages with no network; the token's user and group exist; p11-kit lists the module" {
	need_debian_root
	run in_root "cd /mnt && unshare -n dpkg -i cloak_*.deb libcloak0_*.deb libcloak-sodium0_*.deb \
		libcloak-openssl0_*.deb libcloak-dev_*.deb cloak-ssh-agent_*.deb cloak-pkcs11_*.deb &&
		getent passwd _cloak-pkcs11 && getent group cloak-pkcs11 && p11-kit list-modules"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ "$output" == *"_cloak-pkcs11:x:"*":/var/lib/cloak-pkcs11:/usr/sbin/nologin"* ]] || { echo "$output"; return 1; }
	[[ "$output" == *"cloak-pkcs11:"*"cloak guest token"* ]] || { echo "$output"; return 1; }
}

@test "in a Debian trixie root: trixie's lintian reports no error or warning, and trixie's systemd-analyze verify is clean" {
	need_debian_root
	run in_root "cd /mnt && lintian --fail-on error,warning --info --pedantic cloak_*_amd64.changes > /tmp/lintian 2>&1
		s=\$?; grep -v 'running with root privileges' /tmp/lintian; exit \$s"
	[ "$status" -eq 0 ] && [ -z "$(grep -E '^[EW]: |unused-override|mismatched-override' <<< "$output")" ] ||
		{ echo "$output"; return 1; }
	run in_root "dpkg -i /mnt/cloak_*.deb /mnt/cloak-ssh-agent_*.deb /mnt/cloak-pkcs11_*.deb > /dev/null 2>&1 &&
		cd /usr/lib/systemd && systemd-analyze verify system/cloak-pkcs11@.service system/cloak-pkcs11@.socket 2>&1 &&
		mkdir -p /run/user/0 && XDG_RUNTIME_DIR=/run/user/0 systemd-analyze --user verify \
			user/cloak-ssh-agent.socket user/cloak-ssh-agent.service user/cloak-pkcs11.socket user/cloak-pkcs11.service 2>&1"
	[ "$status" -eq 0 ] && [ -z "$output" ] || { echo "$output"; return 1; }
}

# repack DEB VERSION: DEB with its version, and its exact dependencies on
# the other cloak packages, made VERSION (an upgrade without a rebuild).
repack() {
	local d=$BATS_TEST_TMPDIR/repack
	rm -rf "$d" && dpkg-deb -R "$1" "$d"
	sed -i -e "s/^Version: .*/Version: $2/" -e "s/(= $PKG_VERSION)/(= $2)/g" "$d/DEBIAN/control"
	dpkg-deb -b "$d" "$DEBS/up/$(basename "${1/_${PKG_VERSION}_/_${2}_}")" > /dev/null
}

@test "maintainer scripts: an upgrade restarts the running tokens and keeps their stores; remove stops them and keeps the stores; only purge removes them" {
	need_debian_root
	local up=$PKG_VERSION+1
	mkdir -p "$DEBS/up"
	for p in cloak cloak-ssh-agent cloak-pkcs11; do repack "$(deb "$p")" "$up"; done
	# systemd stands in: /run/systemd/system says it runs, and systemctl
	# logs what the scripts ask of it.
	run in_root "set -e
		mkdir -p /run/systemd/system
		dpkg-divert --quiet --local --rename --add /usr/bin/systemctl
		printf '#!/bin/sh\necho \"\$*\" >> /var/log/systemctl.calls\n' > /usr/bin/systemctl
		chmod 755 /usr/bin/systemctl
		cd /mnt
		dpkg -i cloak_${PKG_VERSION}_amd64.deb cloak-ssh-agent_${PKG_VERSION}_amd64.deb \
			cloak-pkcs11_${PKG_VERSION}_amd64.deb > /dev/null
		mkdir -p /var/lib/cloak-pkcs11/web
		echo 'the store of token web' > /var/lib/cloak-pkcs11/web/token.img
		: > /var/log/systemctl.calls
		echo '== upgrade'
		dpkg -i up/cloak_${up}_amd64.deb up/cloak-ssh-agent_${up}_amd64.deb up/cloak-pkcs11_${up}_amd64.deb > /dev/null
		cat /var/log/systemctl.calls; cat /var/lib/cloak-pkcs11/web/token.img
		: > /var/log/systemctl.calls
		echo '== remove'
		dpkg -r cloak-pkcs11 > /dev/null
		cat /var/log/systemctl.calls; cat /var/lib/cloak-pkcs11/web/token.img
		echo '== reinstall'
		dpkg -i up/cloak-pkcs11_${up}_amd64.deb > /dev/null
		cat /var/lib/cloak-pkcs11/web/token.img
		echo '== purge'
		dpkg -P cloak-pkcs11 > /dev/null
		ls /var/lib/cloak-pkcs11 2>&1 || true
		getent passwd _cloak-pkcs11 | cut -d: -f1"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	local upgrade remove reinstall purge
	upgrade=$(sed -n '/^== upgrade$/,/^== remove$/p' <<< "$output")
	remove=$(sed -n '/^== remove$/,/^== reinstall$/p' <<< "$output")
	reinstall=$(sed -n '/^== reinstall$/,/^== purge$/p' <<< "$output")
	purge=$(sed -n '/^== purge$/,$p' <<< "$output")
	[[ "$upgrade" == *"try-restart cloak-pkcs11@*.service"* ]] || { echo "$output"; return 1; }
	[[ "$upgrade" == *"the store of token web"* ]] || { echo "$output"; return 1; }
	[[ "$remove" == *"stop cloak-pkcs11@*.socket cloak-pkcs11@*.service"* ]] || { echo "$output"; return 1; }
	[[ "$remove" == *"the store of token web"* ]] || { echo "$output"; return 1; }
	[[ "$reinstall" == *"the store of token web"* ]] || { echo "$output"; return 1; }
	[[ "$purge" == *"No such file or directory"* ]] || { echo "$output"; return 1; }
	# Debian leaves system users in place.
	[[ "$purge" == *"_cloak-pkcs11"* ]] || { echo "$output"; return 1; }
}

#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# `make install` gives a user what they need to build and run guests
# elsewhere, and the README's recipe for it is exactly what runs here
# (a prefix that is not /usr, pkg-config cloak-guest).
bats_require_minimum_version 1.5.0
load helpers

setup() {
	PREFIX=$BATS_TEST_TMPDIR/prefix
	make -s -C "$ROOT" O="$O" install PREFIX="$PREFIX" >/dev/null
}

@test "make install puts the monitor, man page, headers, runtime and cloak-guest.pc in place" {
	for f in bin/cloak share/man/man1/cloak.1 include/cloak/abi.h lib/cloak/libcloakrt.a \
		lib/cloak/start.o lib/cloak/guest.ld lib/cloak/idt.ld lib/cloak/include/cloak/guest.h \
		lib/cloak/include/cloak/abi.h lib/cloak/include/stdio.h lib/pkgconfig/cloak-guest.pc; do
		[ -f "$PREFIX/$f" ] || { echo "missing $f"; return 1; }
	done
	run "$PREFIX/bin/cloak" --version
	[ "$status" -eq 0 ]
}

@test "the README's recipe builds a guest from the installed runtime, and the installed monitor boots it" {
	need_kvm
	local guest=$BATS_TEST_TMPDIR/hello.elf
	# The recipe, as README.md shows it (PREFIX is where it was installed).
	sed -n '/^<!-- guest-recipe -->/,/^```$/p' "$ROOT/README.md" | grep -q 'pkg-config --cflags cloak-guest' ||
		{ echo "README no longer shows the recipe"; return 1; }
	export PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig
	# shellcheck disable=SC2046 # the flags are words
	cc $(pkg-config --cflags cloak-guest) -o "$guest" "$ROOT/examples/hello/hello.c" \
		$(pkg-config --libs cloak-guest)
	run timeout 60 "$PREFIX/bin/cloak" ${CLOAK_TEST_MEMORY:+"--memory=$CLOAK_TEST_MEMORY"} "$guest" -- installed
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ "$output" == *"Hello from a cloak guest!"* ]]
	[[ "$output" == *'argv[1] = "installed"'* ]]
}

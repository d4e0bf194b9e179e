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

@test "the README's recipe, run line by line as it stands, builds a guest that the installed monitor boots" {
	need_kvm
	local home=$BATS_TEST_TMPDIR/home work=$BATS_TEST_TMPDIR/work recipe=$BATS_TEST_TMPDIR/recipe
	mkdir -p "$home" "$work"
	cp "$ROOT/examples/hello/hello.c" "$work/guest.c"
	# The recipe, as README.md shows it, with a HOME of the test's own; its
	# `make install` is meant for the source tree.
	sed -n '/^<!-- guest-recipe -->/,/^```$/p' "$ROOT/README.md" | sed '1,2d;$d' >"$recipe"
	[ "$(grep -c '' "$recipe")" -ge 4 ] || { echo "README no longer shows the recipe"; return 1; }
	grep -q 'pkg-config --cflags cloak-guest' "$recipe" || { cat "$recipe"; return 1; }
	run timeout 120 env HOME="$home" ROOT="$ROOT" O="$O" bash -ec "
		make() { command make -s -C \"\$ROOT\" O=\"\$O\" \"\$@\" >/dev/null; }
		cd '$work'
		$(cat "$recipe")"
	if [ "$(auto_backend)" = none ]; then
		# No protected backend runs here: the recipe's run is refused in one
		# line naming the choice to run unprotected, which then boots it.
		[ "$status" -eq 249 ] || { echo "$status: $output"; return 1; }
		[[ "$output" == *"use --memory=shared"* ]] || { echo "$output"; return 1; }
		run timeout 60 "$home/.local/bin/cloak" --memory=shared "$work/guest.elf"
	fi
	[ "$status" -eq 0 ] || { echo "$status: $output"; return 1; }
	[[ "$output" == *"Hello from a cloak guest!"* ]] || { echo "$output"; return 1; }
}

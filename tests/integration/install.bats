#!/usr/bin/env bats
# `make install` gives a user what they need to build and run guests
# elsewhere: the monitor, its man page, the ABI header, and the runtime
# (library, start object, link scripts, headers).
load helpers

setup() {
	DEST=$BATS_TEST_TMPDIR/dest
	make -s -C "$ROOT" O="$O" install DESTDIR="$DEST" PREFIX=/usr >/dev/null
}

@test "make install puts the monitor, man page, ABI header and runtime in place" {
	for f in usr/bin/cloak usr/share/man/man1/cloak.1 usr/include/cloak/abi.h \
		usr/lib/cloak/libcloakrt.a usr/lib/cloak/start.o usr/lib/cloak/guest.ld \
		usr/lib/cloak/idt.ld usr/lib/cloak/include/cloak/guest.h usr/lib/cloak/include/stdio.h; do
		[ -f "$DEST/$f" ] || { echo "missing $f"; return 1; }
	done
	run "$DEST/usr/bin/cloak" --version
	[ "$status" -eq 0 ]
}

@test "a guest built only from the installed runtime boots under the installed monitor" {
	need_kvm
	local lib=$DEST/usr/lib/cloak guest=$BATS_TEST_TMPDIR/hello.elf
	cc -std=gnu11 -O2 -ffreestanding -nostdlib -mno-red-zone -mgeneral-regs-only -fno-pic \
		-fno-pie -fno-stack-protector -I"$lib/include" -I"$DEST/usr/include" \
		-static -Wl,-L,"$lib" -Wl,-T,"$lib/guest.ld" -Wl,--build-id=none \
		-o "$guest" "$lib/start.o" "$ROOT/examples/hello/hello.c" "$lib/libcloakrt.a" -lgcc
	run timeout 60 "$DEST/usr/bin/cloak" ${CLOAK_TEST_MEMORY:+"--memory=$CLOAK_TEST_MEMORY"} "$guest" -- installed
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ "$output" == *"Hello from a cloak guest!"* ]]
	[[ "$output" == *'argv[1] = "installed"'* ]]
}

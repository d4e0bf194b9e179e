#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# libcloak as it is shipped: exported symbols, `make install` with PREFIX and
# DESTDIR, pkg-config, CLOAK_STATS=1, and libcloak-sodium preloaded under a
# program built against the real libsodium.

setup() {
	REPO="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
	BUILD="${CLOAK_BUILD_DIR:-$REPO/build}"
	TMP="$(mktemp -d)"
}

teardown() {
	rm -rf "$TMP"
}

defined_symbols() {
	nm -D --defined-only "$1" | awk '$2 == "T" || $2 == "D" || $2 == "B" { sub(/@.*/, "", $3); print $3 }' | sort
}

@test "libcloak.so exports only the cloak_secret_* API" {
	run defined_symbols "$BUILD/libcloak/libcloak.so"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -ge 14 ]
	for s in "${lines[@]}"; do [[ $s == cloak_secret_* ]] || { echo "unexpected export $s"; false; }; done
	grep -q '^cloak_secret_alloc$' <<<"$output"
	grep -q '^cloak_secret_stats_print$' <<<"$output"
}

@test "the front ends export only their foreign API" {
	run defined_symbols "$BUILD/libcloak/libcloak-sodium.so"
	[ "$output" = "$(printf '%s\n' sodium_allocarray sodium_free sodium_malloc sodium_mprotect_noaccess sodium_mprotect_readonly sodium_mprotect_readwrite)" ]
	run defined_symbols "$BUILD/libcloak/libcloak-openssl.so"
	for s in "${lines[@]}"; do [[ $s == CRYPTO_* ]] || { echo "unexpected export $s"; false; }; done
	grep -q '^CRYPTO_secure_malloc$' <<<"$output"
	nm -D --defined-only "$BUILD/libcloak/libcloak-openssl.so" | grep -q 'CRYPTO_secure_malloc@@OPENSSL_3.0.0'
}

@test "make install honours PREFIX and DESTDIR; pkg-config builds a working program" {
	run make -s -C "$REPO" O="${CLOAK_BUILD_O:-build}" install-libcloak DESTDIR="$TMP/root" PREFIX=/opt/cloak
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	root="$TMP/root/opt/cloak"
	for f in include/cloak/secret.h lib/libcloak.a lib/libcloak.so lib/libcloak.so.0 \
		lib/libcloak-sodium.so.0 lib/libcloak-openssl.so.0 lib/pkgconfig/cloak.pc \
		share/man/man3/libcloak.3 share/man/man3/cloak_secret_alloc.3; do
		[ -e "$root/$f" ] || { echo "missing $f"; false; }
	done
	grep -q '^prefix=/opt/cloak$' "$root/lib/pkgconfig/cloak.pc"
	cat >"$TMP/user.c" <<-'C'
	#include <cloak/secret.h>
	#include <stdio.h>
	#include <string.h>
	int main(void) {
		char *k = cloak_secret_alloc(32);
		if (!k) { puts(cloak_secret_last_error()); return 1; }
		strcpy(k, "hunter2");
		struct cloak_secret_info i;
		cloak_secret_info(&i);
		printf("%s %s\n", k, cloak_secret_backend_name(i.backend));
		fflush(stdout); /* before the stats line printed at exit */
		cloak_secret_free(k);
		return 0;
	}
	C
	flags=$(PKG_CONFIG_SYSROOT_DIR="$TMP/root" PKG_CONFIG_LIBDIR="$root/lib/pkgconfig" pkg-config --cflags --libs cloak)
	cc -o "$TMP/user" "$TMP/user.c" $flags
	run env LD_LIBRARY_PATH="$root/lib" CLOAK_STATS=1 "$TMP/user"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "hunter2 memfd_secret" ]
	# It exits right after its free, within the delay before the memory goes back.
	[[ ${lines[1]} == "libcloak stats (pid "*"backend memfd_secret; 0 secrets in use (0 bytes); 1 allocs, 1 frees; 1 arenas"*"1 memfd_secret files (hibernation blocked); all memory returned 0 times"* ]]
}

@test "a libsodium program gets memfd_secret memory with libcloak-sodium preloaded" {
	run "$BUILD/tests/libcloak/sodium_user"
	[ "$status" -eq 0 ]
	[ "$output" = "readable" ]
	run env LD_PRELOAD="$BUILD/libcloak/libcloak-sodium.so" "$BUILD/tests/libcloak/sodium_user"
	[ "$status" -eq 0 ]
	[ "$output" = "secret" ]
}

@test "keyscan, which the key-scanning tests rely on, finds a number in each encoding it claims, and nothing else" {
	local ks=$BUILD/tests/libcloak/keyscan num=00c3a1f0e2d4b6978812345678deadbeef0102030405060708090a0b0c0d0e0f
	python3 - "$TMP" "$num" <<'PY'
import os, sys
d, num = sys.argv[1], bytes.fromhex(sys.argv[2]).lstrip(b"\0")
encs = {"be": num, "le": num[::-1], "hex": num.hex().encode(), "HEX": num.hex().upper().encode()}
filler = lambda: os.urandom(50000)
for name, e in encs.items():
    open(os.path.join(d, name), "wb").write(filler() + e + filler())
# Near misses: one byte off, and the number cut short.
open(os.path.join(d, "none"), "wb").write(filler() + num[:-1] + b"\x55" + filler() + num[:-2] + filler())
PY
	for enc in be le hex HEX; do
		run "$ks" "$TMP/$enc" k="$num"
		[ "$status" -eq 1 ] || { echo "$enc: $status: $output"; return 1; }
		[ "$(grep -c '^found ' <<<"$output")" -eq 1 ] || { echo "$enc: $output"; return 1; }
		[[ "$output" == *"found k $enc"* ]] || { echo "$enc: $output"; return 1; }
	done
	run "$ks" "$TMP/none" k="$num"
	[ "$status" -eq 0 ] || { echo "near misses: $status: $output"; return 1; }
}

#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The two public headers live together: <cloak/abi.h> (the guest ABI) and
# <cloak/secret.h> (libcloak) compile in either order, as C11 and as C++,
# without a warning, and keep their own meanings of similar names.

setup() {
	REPO="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
	TMP="$(mktemp -d)"
}

teardown() {
	rm -rf "$TMP"
}

# compile LANG FIRST SECOND: a translation unit including both headers in
# that order, using names from both; its exit status is the test's.
compile() {
	local src="$TMP/both.$1"
	cat >"$src" <<-C
	#include <cloak/$2.h>
	#include <cloak/$3.h>
	/* The ABI's protection bit 1 (no direct map) and libcloak's 0x01 stay
	   distinct names; so do the ABI's and libcloak's backends. */
	_Static_assert(CLOAK_PROT_NO_DIRECT_MAP == (1ull << 1), "abi.h's bit");
	_Static_assert(CLOAK_SECRET_PROT_NO_DIRECT_MAP == 0x01, "secret.h's bit");
	_Static_assert(CLOAK_BACKEND_SECRET == 1u && CLOAK_SECRET_BACKEND_MLOCK == 2, "backends");
	int use(void);
	int use(void) { struct cloak_secret_info i; i.backend = CLOAK_SECRET_BACKEND_NONE; return i.backend; }
	C
	if [ "$1" = c ]; then
		cc -std=c11 -pedantic -Wall -Wextra -Werror -I"$REPO/include" -c -o "$TMP/both.o" "$src"
	else
		sed -i 's/_Static_assert/static_assert/' "$src"
		g++ -std=c++11 -pedantic -Wall -Wextra -Werror -I"$REPO/include" -c -o "$TMP/both.o" "$src"
	fi
}

@test "abi.h then secret.h: C11" {
	compile c abi secret
}

@test "secret.h then abi.h: C11" {
	compile c secret abi
}

@test "abi.h then secret.h: C++" {
	compile cc abi secret
}

@test "secret.h then abi.h: C++" {
	compile cc secret abi
}

@test "secret.h defines only cloak_secret_ and CLOAK_SECRET_ names" {
	run grep -oE '^#define [A-Za-z_0-9]+' "$REPO/include/cloak/secret.h"
	[ "$status" -eq 0 ]
	for d in "${lines[@]}"; do
		name=${d#\#define }
		[[ $name == CLOAK_SECRET_* ]] || { echo "stray macro $name"; return 1; }
	done
}

#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The two public headers live together: <cloak/abi.h> (the guest ABI) and
# <cloak/secret.h> (libcloak) compile in either order, as C11 and as C++,
# without a warning, and keep their own meanings of similar names; the
# names before the CLOAK_SECRET_ prefix still build, with a warning.

bats_require_minimum_version 1.5.0

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

@test "secret.h defines only cloak_secret_ and CLOAK_SECRET_ macros; its deprecated aliases are not abi.h's names" {
	run grep -oE '^#define [A-Za-z_0-9]+' "$REPO/include/cloak/secret.h"
	[ "$status" -eq 0 ]
	for d in "${lines[@]}"; do
		name=${d#\#define }
		[[ $name == CLOAK_SECRET_* ]] || { echo "stray macro $name"; return 1; }
	done
	# The deprecated aliases (enumerators) are names <cloak/abi.h> never uses.
	run sed -n '/^enum cloak_secret_deprecated_names {/,/^};/p' "$REPO/include/cloak/secret.h"
	aliases=$(grep -oE 'CLOAK_SECRET_RENAMED\(CLOAK_[A-Z_]+' <<<"$output" | sed 's/.*(//')
	[ "$(wc -l <<<"$aliases")" -ge 15 ]
	for a in $aliases; do
		[[ $a != CLOAK_SECRET_* ]] || { echo "alias $a has the new prefix"; return 1; }
		run ! grep -qw "$a" "$REPO/include/cloak/abi.h"
	done
}

# old_names_program FILE: a program written against libcloak 0.1's header,
# before the CLOAK_SECRET_ prefix (the names docs/libcloak.md "API
# stability" keeps as deprecated aliases).
old_names_program() {
	cat >"$1" <<-'C'
	#include <cloak/abi.h>
	#include <cloak/secret.h>
	#include <stdio.h>
	int main(void)
	{
		struct cloak_secret_info info;
		if (cloak_secret_info(&info) != 0 || !(info.protections & CLOAK_PROT_CANARIES))
			return 1;
		if (info.backend != CLOAK_BACKEND_SECRETMEM && info.backend != CLOAK_BACKEND_MLOCK)
			return 1;
		if (cloak_secret_set_policy(CLOAK_POLICY_SECRETMEM_ONLY) != 0)
			return 1;
		unsigned char *k = cloak_secret_alloc_guarded(32);
		if (!k)
			return 1;
		k[0] = 7;
		if (cloak_secret_protect(k, CLOAK_NOACCESS) != 0 ||
		    cloak_secret_protect(k, CLOAK_READONLY) != 0 || k[0] != 7 ||
		    cloak_secret_protect(k, CLOAK_READWRITE) != 0)
			return 1;
		cloak_secret_free(k);
		puts("old names work");
		return 0;
	}
	C
}

@test "a program using the names before the CLOAK_SECRET_ prefix still builds and runs, with a deprecation warning naming the new name (gcc and clang)" {
	BUILD="${CLOAK_BUILD_DIR:-$REPO/build}"
	[ -f "$BUILD/libcloak/libcloak.a" ] || { echo "build libcloak first (make)"; return 1; }
	old_names_program "$TMP/old.c"
	for compiler in cc clang; do
		command -v "$compiler" >/dev/null || { echo "$compiler is not installed"; return 1; }
		run "$compiler" -std=c11 -Wall -Wextra -I"$REPO/include" -o "$TMP/old" "$TMP/old.c" \
			"$BUILD/libcloak/libcloak.a" -pthread
		echo "$compiler: $output"
		[ "$status" -eq 0 ]
		for name in NOACCESS READONLY READWRITE POLICY_SECRETMEM_ONLY PROT_CANARIES BACKEND_SECRETMEM; do
			grep -E "CLOAK_$name.*deprecated.*use CLOAK_SECRET_$name" <<<"$output" ||
				{ echo "no deprecation warning for CLOAK_$name"; return 1; }
		done
		run "$TMP/old"
		echo "$output"
		[ "$status" -eq 0 ]
		[ "$output" = "old names work" ]
	done
	# Turned into errors, the warnings stop the build: they are real warnings.
	run ! cc -std=c11 -Werror=deprecated-declarations -I"$REPO/include" -c -o "$TMP/old.o" "$TMP/old.c"
}

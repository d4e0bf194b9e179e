#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Malformed guest images: cloak must refuse each one with exit status 250
# (CLOAK_EXIT_BADIMAGE) and a single line naming the fault. The images are
# written by mkbadelf (tests/unit/mkbadelf.c) from examples/hello, one file
# per case; the expected reasons come from monitor/setup/elf_load.c.
#
# Needs the build (cloak, mkbadelf, hello.elf) and /dev/kvm: without them
# each test is skipped with the reason, or fails when CLOAK_REQUIRE_KVM=1.
load helpers
MKBADELF=$ROOT/$O/tests/mkbadelf

missing_build() {
	local f
	for f in "$CLOAK" "$MKBADELF" "$HELLO"; do
		[ -f "$f" ] || { echo "$f is not built (run make)"; return; }
	done
}

setup_file() {
	if [ -z "$(missing_build)" ]; then
		"$MKBADELF" "$HELLO" "$BATS_FILE_TMPDIR/bad"
	fi
}

setup() {
	local why
	why=$(missing_build)
	if [ -n "$why" ]; then
		if [ "${CLOAK_REQUIRE_KVM:-0}" = 1 ]; then
			echo "CLOAK_REQUIRE_KVM=1 but $why" >&2
			return 1
		fi
		skip "$why"
	fi
	need_kvm
}

# refused CASE REASON: cloak exits 250 on CASE.elf printing one line that
# contains REASON. --timeout keeps an image accepted by mistake from
# hanging the suite.
refused() {
	run_cloak --timeout=5 "$BATS_FILE_TMPDIR/bad/$1.elf"
	echo "exit status $status, output:"
	echo "$output"
	[ "$status" -eq 250 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ ${lines[0]} == cloak:* ]]
	[[ $output == *"$2"* ]]
}

@test "the unmodified hello.elf is not refused (the variants fail for their mutation)" {
	run_cloak --timeout=30 "$HELLO"
	echo "exit status $status, output: $output"
	[ "$status" -ne 250 ]
}

@test "truncated ELF header" { refused truncated-header "too short for an ELF64 header"; }
@test "truncated program header table" { refused truncated-phdrs "program header table"; }
@test "bad ELF magic" { refused bad-magic "bad magic"; }
@test "32-bit ELF class" { refused wrong-class "not ELFCLASS64"; }
@test "big-endian ELF" { refused big-endian "not little-endian"; }
@test "wrong machine (aarch64)" { refused wrong-machine "not x86-64"; }
@test "position-independent executable (ET_DYN)" { refused et-dyn "-no-pie"; }
@test "no CLOAK ABI note" { refused no-abi-note "not a cloak guest (no CLOAK ABI note)"; }
@test "wrong ABI version" { refused wrong-abi-version "ABI version 2, this monitor speaks version 1"; }
@test "dynamic executable (PT_INTERP)" { refused interp "PT_INTERP"; }
@test "segment file size larger than memory size" { refused filesz-gt-memsz "exceeds memory size"; }
@test "segment past the end of the file" { refused segment-past-eof "lies outside the"; }
@test "segment in the monitor's reserved area" { refused reserved-area "reserved area"; }
@test "segment beyond guest memory" { refused beyond-memory "ends beyond guest memory"; }
@test "writable and executable segment" { refused wx-segment "W+X refused"; }
@test "overlapping segments" { refused overlapping-segments "overlap"; }
@test "entry point outside code" { refused bad-entry "entry point"; }

@test "mkbadelf writes every case this file tests" {
	run "$MKBADELF" --list
	[ "$status" -eq 0 ]
	local c
	for c in "${lines[@]}"; do
		grep -q "refused $c " "$BATS_TEST_FILENAME" || { echo "case $c is not tested"; false; }
		[ -f "$BATS_FILE_TMPDIR/bad/$c.elf" ] || { echo "case $c was not written"; false; }
	done
}

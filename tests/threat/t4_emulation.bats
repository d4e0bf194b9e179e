#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Threat 4 (the proposal: guest privilege escalation via compromised device
# emulation): range tricks against the checked-access module. Bad buffers,
# wrapped lengths, buffers straddling the end of memory or a shared and a
# private page, and unshare-then-access are in tests/integration/hostile.bats;
# this suite adds overlapping ranges, ranges unshared between calls, no
# partial copy in either direction, failed SHARE/UNSHARE with no partial
# effect, and argument-block games (threat_emulation.c).
load threat_helpers

run_emulation() {
	IMG=$BATS_TEST_TMPDIR/disk.img
	truncate -s 64K "$IMG"
	run_cloak --block=disk="$IMG" "$GUESTS/threat_emulation.elf"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
}

@test "overlapping SHARE/UNSHARE ranges: the last call decides, page by page" {
	need_kvm; run_emulation
	expect_line "share_p0_p2 ret=0"
	expect_line "share_p2_p4_overlapping ret=0"
	expect_line "share_p1_p2_inside ret=0"
	expect_line "console_p0_p1_shared ret=12"
	expect_line "unshare_p1 ret=0"
	expect_line "console_p0_p1_after_unshare ret=-3"
	expect_line "console_p1_p2_after_unshare ret=-3"
	expect_line "console_p2_p3_still_shared ret=12"
	expect_line "unshare_p3_p5_partly_private ret=0"
	expect_line "console_p2_p3_after_unshare ret=-3"
	expect_line "console_p3_p4_after_unshare ret=-3"
	# Only the two allowed writes crossed a page border.
	[ "$(grep -c 'TAIL-0HEAD-1' <<<"$output")" -eq 1 ]
	[ "$(grep -c 'TAIL-2HEAD-3' <<<"$output")" -eq 1 ]
	! grep -qE 'TAIL-1HEAD-2|TAIL-3HEAD-4' <<<"$output"
}

@test "a range unshared between two calls is refused at the second, untouched" {
	need_kvm; run_emulation
	expect_line "random_p2_shared ret=16"
	expect_line "random_p2_after_unshare ret=-3"
	expect_line "random_p2_after_unshare_untouched=yes"
}

@test "buffers straddling a shared and a private page: refused with no partial copy" {
	need_kvm; run_emulation
	expect_line "random_p0_p1_straddle ret=-3"
	expect_line "random_straddle_shared_part_untouched=yes"
	expect_line "random_straddle_private_part_untouched=yes"
	expect_line "block_read_p0_p1_straddle ret=-3"
	expect_line "block_straddle_shared_part_untouched=yes"
	expect_line "block_straddle_private_part_untouched=yes"
}

@test "wrapped or out-of-memory ranges in device calls and failed SHARE/UNSHARE change nothing" {
	need_kvm; run_emulation
	expect_line "block_read_wraps ret=-2"
	expect_line "block_read_beyond_end ret=-2"
	expect_line "random_wraps ret=-2"
	expect_line "share_p4_past_end ret=-2"
	expect_line "console_p4_p5_after_failed_share ret=-3"
	expect_line "unshare_p0_wraps ret=-2"
	expect_line "console_p0_after_failed_unshare ret=6"
}

@test "argument-block games: a buffer over its own block, a block unsharing itself" {
	need_kvm; run_emulation
	expect_line "random_onto_own_block ret=24 len=24"
	# The reply to an UNSHARE of its own page is dropped, not written into
	# what has become a private page.
	expect_line "unshare_own_block ret=77"
}

#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Block devices: integrity both ways, request validation, start-up errors,
# and durability of flushed writes when the monitor is killed.
bats_require_minimum_version 1.5.0
load helpers

BLK=$GUESTS/block_io.elf
# The same guest with the runtime's block cache off (its inline path).
BLK_NOCACHE=$GUESTS/block_io_nocache.elf

setup() {
	TMP=$(mktemp -d)
}

teardown() {
	rm -rf "$TMP"
}

# pattern FILE SECTORS SECTOR_SIZE SEED [verify]: writes (or checks) the
# pattern block_io.c uses: byte k of sector s = (s*131 + SEED + k*7) & 0xff.
pattern() {
	python3 - "$@" <<'PY'
import sys
path, nsec, ssz, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
want = bytearray()
for s in range(nsec):
    base = s * 131 + seed
    want += bytes((base + k * 7) & 0xff for k in range(ssz))
if len(sys.argv) > 5:
    got = open(path, "rb").read(len(want))
    if got != want:
        bad = next(i for i in range(len(want)) if i >= len(got) or got[i] != want[i])
        sys.exit("mismatch at byte %d" % bad)
else:
    open(path, "r+b").write(want)
PY
}

@test "guest writes a pattern over a 512-byte-sector disk; the host reads it back byte for byte" {
	need_kvm
	truncate -s 96K "$TMP/d.img"
	run_cloak --block d="$TMP/d.img" "$BLK" fill d 7
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[[ "$output" == *"filled 98304 bytes"* ]]
	pattern "$TMP/d.img" 192 512 7 verify
}

@test "without the block cache, I/O from private buffers goes through the bounce pool, both ways" {
	need_kvm
	truncate -s 1M "$TMP/d.img"
	# 256 KiB a call from the guest's private buffer: protected, the
	# inline path must see it is outside the bounce pool and copy it
	# through; handed to the monitor as it is, the call fails (-3).
	run_cloak --block d="$TMP/d.img" "$BLK_NOCACHE" fill d 5
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[[ "$output" == *"filled 1048576 bytes"* ]]
	pattern "$TMP/d.img" 2048 512 5 verify
	run_cloak --block d="$TMP/d.img" "$BLK_NOCACHE" verify d 5
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[[ "$output" == *"verified 1048576 bytes"* ]]
}

@test "host writes a pattern over a 4096-byte-sector disk; the guest reads it back" {
	need_kvm
	truncate -s 96K "$TMP/d.img"
	pattern "$TMP/d.img" 24 4096 3
	run_cloak --block d="$TMP/d.img",sector=4096 "$BLK" verify d 3
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[[ "$output" == *"verified 98304 bytes"* ]]
	# A different seed must not verify: the check can fail.
	run_cloak --block d="$TMP/d.img",sector=4096 "$BLK" verify d 4
	[ "$status" -eq 1 ]
	[[ "$output" == *"mismatch"* ]]
}

@test "batched requests (cloak_block_submit): 100 writes and a flush land, read back; a refused request fails alone" {
	need_kvm
	truncate -s 96K "$TMP/d.img"
	run_cloak --block d="$TMP/d.img" "$BLK" batch d 9
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[[ "$output" == *"batch round trip 100 sectors"* ]] || { echo "$output"; false; }
	# Past the end refused (-8, ERANGE) alone: the writes before and after it
	# and the flush ran.
	[[ "$output" == *"partial: 1 failed; statuses 0 -8 0 0"* ]] || { echo "$output"; false; }
	# On the host: sectors 0 and 1 are the partial batch's, 2-99 the
	# pattern, the rest still zero.
	python3 - "$TMP/d.img" <<'PY'
import sys
img = open(sys.argv[1], "rb").read()
want = bytearray(b"A" * 512 + b"B" * 512)
for s in range(2, 100):
    want += bytes(((s * 131 + 9) + k * 7) & 0xff for k in range(512))
want += bytes(len(img) - len(want))
if img != want:
    sys.exit("image differs at byte %d" % next(i for i in range(len(img)) if img[i] != want[i]))
PY
}

@test "bad requests get their error code and leave the image untouched" {
	need_kvm
	truncate -s 64K "$TMP/d.img"
	pattern "$TMP/d.img" 128 512 9
	cp "$TMP/d.img" "$TMP/orig.img"
	run_cloak --block d="$TMP/d.img" "$BLK" errors d
	[ "$status" -eq 0 ]
	expect="good: 0
bad-handle: -5
bad-op: -1
zero-len: -1
odd-len: -1
odd-offset: -1
past-end: -8
straddle-end: -8
wrap: -8
too-big: -11
buf-outside-ram: -2
buf-wraps: -2
buf-private: -3
buf-straddle: -3
flush-with-len: -1
flush: 0
write: 0"
	[ "$output" = "$expect" ] || { diff <(echo "$expect") <(echo "$output"); false; }
	# Only the final good write (sector 0, from the bounce pool) changed it.
	cmp -i 512 "$TMP/d.img" "$TMP/orig.img"
	[ "$(stat -c %s "$TMP/d.img")" -eq 65536 ]
}

@test "a read-only device refuses writes with EROFS" {
	need_kvm
	truncate -s 64K "$TMP/d.img"
	run_cloak --block d="$TMP/d.img",ro "$BLK" errors d
	[ "$status" -eq 0 ]
	[[ "$output" == *"write: -7"* ]]
	[[ "$output" == *"flush: 0"* ]]
	run_cloak --block d="$TMP/d.img",ro "$BLK" fill d 1
	[ "$status" -eq 1 ]
	[[ "$output" == *"write at 0 failed: -7"* ]]
	[ -z "$(tr -d '\0' < "$TMP/d.img")" ]
}

@test "a trailing partial sector is never exposed or written" {
	need_kvm
	head -c 66000 /dev/urandom > "$TMP/d.img"
	tail -c 464 "$TMP/d.img" > "$TMP/tail"
	run_cloak --block d="$TMP/d.img" "$BLK" info d
	[[ "$output" == *"capacity 65536 sector 512"* ]]
	run_cloak --block d="$TMP/d.img" "$BLK" fill d 2
	[ "$status" -eq 0 ]
	[ "$(stat -c %s "$TMP/d.img")" -eq 66000 ]
	cmp "$TMP/tail" <(tail -c 464 "$TMP/d.img")
}

@test "two block devices side by side" {
	need_kvm
	truncate -s 32K "$TMP/a.img"
	truncate -s 64K "$TMP/b.img"
	run_cloak --block a="$TMP/a.img" --block b="$TMP/b.img",sector=4096 "$BLK" info b
	[[ "$output" == *"capacity 65536 sector 4096 flags 0 handle 1"* ]]
	run_cloak --block a="$TMP/a.img" --block b="$TMP/b.img" "$BLK" info nosuch
	[ "$status" -eq 3 ]
	[[ "$output" == *"open nosuch: -5"* ]]
}

@test "a missing, unreadable or too small image, or a bad spec, is a one-line start-up error" {
	need_kvm
	run_cloak --block d="$TMP/none.img" "$BLK" info d
	[ "$status" -eq 247 ]
	[[ "$output" == "cloak: --block d: cannot open $TMP/none.img: No such file or directory" ]]
	truncate -s 100 "$TMP/small.img"
	run_cloak --block d="$TMP/small.img" "$BLK" info d
	[ "$status" -eq 247 ]
	[[ "$output" == *"smaller than one 512-byte sector"* ]]
	run_cloak --block d="$TMP/small.img",sector=1024 "$BLK" info d
	[ "$status" -eq 251 ]
	[[ "$output" == *"unknown option 'sector=1024'"* ]]
	run_cloak --block "=$TMP/small.img" "$BLK" info d
	[ "$status" -eq 251 ]
	truncate -s 4K "$TMP/a.img"
	run_cloak --block d="$TMP/a.img" --block d="$TMP/a.img" "$BLK" info d
	[ "$status" -eq 251 ]
	[[ "$output" == *"two devices are named 'd'"* ]]
	mkdir "$TMP/dir"
	run_cloak --block d="$TMP/dir" "$BLK" info d
	[ "$status" -eq 247 ]
	[ "$output" = "cloak: --block d: cannot open $TMP/dir: Is a directory" ]
}

@test "one image named twice read-write in one run: the error says this run holds it, not another process" {
	need_kvm
	truncate -s 4K "$TMP/a.img"
	run_cloak --block a="$TMP/a.img" --block b="$TMP/a.img" "$BLK" info b
	[ "$status" -eq 251 ] || { echo "$status: $output"; return 1; }
	[ "$output" = "cloak: --block b: $TMP/a.img is already attached as --block a in this run: an image is attached read-write once, or read-only (,ro) any number of times" ] ||
		{ echo "$output"; return 1; }
	# Read-write beside read-only conflicts too; read-only twice does not.
	run_cloak --block a="$TMP/a.img",ro --block b="$TMP/a.img" "$BLK" info b
	[ "$status" -eq 251 ] || { echo "$status: $output"; return 1; }
	[[ "$output" == "cloak: --block b: $TMP/a.img is already attached as --block a in this run: "* ]] || { echo "$output"; return 1; }
	run_cloak --block a="$TMP/a.img",ro --block b="$TMP/a.img",ro "$BLK" info b
	[ "$status" -eq 0 ] || { echo "$status: $output"; return 1; }
	# Another process's lock is still reported as such.
	run flock -x "$TMP/a.img" timeout 60 "$CLOAK" --block a="$TMP/a.img" "$BLK" info a
	[ "$status" -eq 247 ] || { echo "$status: $output"; return 1; }
	[ "$output" = "cloak: --block a: $TMP/a.img is in use by another process" ] || { echo "$output"; return 1; }
}

@test "after kill -9 during a write stream, every write the guest saw flushed is in the file" {
	need_kvm
	truncate -s 8M "$TMP/d.img"
	"$CLOAK" --block d="$TMP/d.img" "$BLK" stream d > "$TMP/out" 2>&1 &
	pid=$!
	for _ in $(seq 100); do
		n=$(grep -c '^flushed' "$TMP/out" || true)
		[ "$n" -ge 20 ] && break
		sleep 0.1
	done
	kill -9 "$pid"
	wait "$pid" || true
	last=$(grep '^flushed' "$TMP/out" | tail -1 | cut -d' ' -f2)
	[ -n "$last" ] && [ "$last" -ge 160 ] || { cat "$TMP/out"; false; }
	if grep -q "stream done" "$TMP/out"; then echo "the stream finished before the kill"; return 1; fi
	python3 - "$TMP/d.img" "$last" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
for s in range(int(sys.argv[2])):
    sec = data[s * 512:(s + 1) * 512]
    if sec[:4] != b"SEQ\0" or struct.unpack("<Q", sec[8:16])[0] != s:
        sys.exit("flushed sector %d is not in the file" % s)
PY
}

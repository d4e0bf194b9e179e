#!/usr/bin/env bats
# Structural guarantees that no runtime test can show.

ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)

@test "only guestmem.c and membackend.c can reach the guest mapping" {
	cd "$ROOT/monitor"
	# The backend header (which exposes the host mapping) is included by
	# exactly these two files.
	run grep -l '#include "membackend.h"' ./*.c ./*.h
	[ "$output" = "./guestmem.c" ] || [ "$output" = $'./guestmem.c\n./membackend.c' ]
	# guestmem.h hands out no pointer into guest memory: its functions
	# return statuses, sizes and integers only.
	! grep -nE '^[a-z_ ]*\*[a-z_]+\(' guestmem.h | grep -v 'struct guestmem \*gm_create'
	# And the struct is opaque outside guestmem.c.
	! grep -n 'struct guestmem {' ./*.h
}

@test "no monitor file but the hypercall dispatcher reads guest call blocks" {
	cd "$ROOT/monitor"
	run grep -l 'gm_copy_from(vm->gm, args' ./*.c
	[ "$output" = "./hypercall.c" ]
}

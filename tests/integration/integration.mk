# SPDX-License-Identifier: ISC
# Every bats suite here runs under `make check` (after `make all`).
TESTS += $(sort $(wildcard tests/integration/*.bats))

# SPDX-License-Identifier: ISC
# Threat tests (docs/threat-model.md): one bats suite per row of the 2020 proposal's
# "What does this set mitigate?", run by `make check`. threat-probe is the
# other process that attacks a running monitor's guest RAM.
$(O)/tests/threat-probe: tests/threat/probe.c
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -o $@ $<

ALL_TARGETS += $(O)/tests/threat-probe
TESTS += $(sort $(wildcard tests/threat/*.bats))

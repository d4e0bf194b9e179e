# SPDX-License-Identifier: ISC
# Tests, grouped by what they prove:
#   tests/unit/         host-only unit tests (cmocka), no KVM needed
#   tests/guests/       guest programs the integration tests boot
#   tests/integration/  bats suites that run the monitor on guests
#   tests/fuzz/         libFuzzer targets (make fuzz-smoke)
# Each topic adds rules in its own tests/*/*.mk.

# $(call unit_test,NAME,EXTRA_OBJS,LIBS): tests/unit/NAME.c -> $(O)/tests/NAME
# plus its sanitizer twin $(O)/san/tests/NAME (run by make check-asan).
define unit_test
$(O)/tests/$(1): tests/unit/$(1).c $(2) $(O)/monitor/libmonitor.a
	@mkdir -p $$(dir $$@)
	$$(CC) $$(HOST_CFLAGS) -Imonitor -o $$@ $$< $(2) $(O)/monitor/libmonitor.a -lcmocka $(3)
$(O)/san/tests/$(1): tests/unit/$(1).c $(subst $(O)/,$(O)/san/,$(2)) $(O)/san/monitor/libmonitor.a
	@mkdir -p $$(dir $$@)
	$$(CC) $$(SAN_CFLAGS) -Imonitor -o $$@ $$< $(subst $(O)/,$(O)/san/,$(2)) $(O)/san/monitor/libmonitor.a -lcmocka $(3)
ALL_TARGETS += $(O)/tests/$(1)
TESTS += $(O)/tests/$(1)
ASAN_TESTS += $(O)/san/tests/$(1)
endef

# Every tests/guests/NAME.c becomes $(O)/tests/guests/NAME.elf.
TEST_GUESTS := $(patsubst tests/guests/%.c,$(O)/tests/guests/%.elf,$(wildcard tests/guests/*.c))
$(foreach g,$(TEST_GUESTS),$(eval $(call guest_elf,$(g),$(patsubst $(O)/tests/guests/%.elf,$(O)/guest/tests/guests/%.o,$(g)))))
ALL_TARGETS += $(TEST_GUESTS)

include $(wildcard tests/*/*.mk)

# make check-mutants: every deliberate defect in tests/mutants/ must be
# caught by the tests it names (tests/mutants/run-mutants).
.PHONY: check-mutants
check-mutants: all
	tests/mutants/run-mutants --build $(O) --svm $(MUTANTS)

# make lint: shellcheck over every shell script and bats file, and the docs
# against the tree (scripts/lint, scripts/check-docs).
.PHONY: lint check-user check-loop
lint:
	scripts/lint
# make check-user: the README's test command as an ordinary user, from a
# fresh clone (run as root; tests/harness/as-user).
check-user:
	tests/harness/as-user
# make check-loop [LOOPS=20]: make check that many times in a row, as root
# and as an ordinary user, every run 0 failed (tests/harness/check-loop).
LOOPS ?= 20
check-loop:
	tests/harness/check-loop $(LOOPS)

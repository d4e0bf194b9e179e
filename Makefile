# SPDX-License-Identifier: ISC
# cloak: top-level build. Each part adds its own rules in its build.mk:
#   common/   code shared by the monitor and libcloak (memfd_secret, probes)
#   monitor/  the `cloak` KVM monitor          runtime/  the guest runtime
#   libcloak/ secret memory for host processes examples/ example guests
#   services/ the key services: common/, ssh-agent/, pkcs11/
#   tests/    unit, integration, fuzz          bench/    `make bench`
# Parts append to ALL_TARGETS, TESTS (TAP producers run by `make check`),
# ASAN_TESTS (run by `make check-asan`) and BENCHES.

VERSION := 0.1.0
O ?= build
PREFIX ?= /usr/local
# Where libcloak and the PKCS#11 module are installed (a distribution's
# multiarch directory: Debian's packaging passes /usr/lib/x86_64-linux-gnu);
# the guest runtime and guest images stay in $(PREFIX)/lib/cloak.
LIBDIR ?= $(PREFIX)/lib
CC ?= cc
GUEST_CC ?= $(CC)

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
        -Wno-unused-parameter
# -gdwarf-4: valgrind 3.19 cannot read the DWARF 5 that clang 14 emits by default.
HOST_CFLAGS := -std=gnu11 -O2 -g -gdwarf-4 $(WARN) -Iinclude -Icommon -D_GNU_SOURCE \
        -DCLOAK_VERSION=\"$(VERSION)\" -fstack-protector-strong -D_FORTIFY_SOURCE=2 \
        -fno-strict-aliasing $(EXTRA_CFLAGS)
HOST_LDFLAGS := $(EXTRA_LDFLAGS)

# Sanitizer build of host code (monitor, libcloak, unit tests).
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
SAN_CFLAGS := $(filter-out -D_FORTIFY_SOURCE=2,$(HOST_CFLAGS)) -O1 $(SAN_FLAGS)

ALL_TARGETS :=
TESTS :=
ASAN_TESTS :=
BENCHES :=
CLEAN_FILES :=

.PHONY: all all-targets build-targets check check-asan check-clang demo bench fuzz-smoke clean install
all: all-targets

include common/build.mk
include runtime/build.mk
include monitor/build.mk
include examples/build.mk
include services/common/build.mk
include services/ssh-agent/build.mk
include services/pkcs11/build.mk
include systemd/build.mk
include libcloak/build.mk
include tests/build.mk
include bench/build.mk

# Debian packages the build needs (.ci/packages), checked once per build dir.
$(O)/.deps-ok: .ci/packages scripts/ensure-deps
	scripts/ensure-deps
	@mkdir -p $(O) && touch $@

all-targets: $(O)/.deps-ok
	$(MAKE) --no-print-directory build-targets
build-targets: $(ALL_TARGETS)

# Builds and boots the demo guest with the strongest protection this host
# runs, and says which protections hold here (scripts/demo).
demo: all
	O=$(O) scripts/demo

check: all
	tests/harness/run-tests $(TESTS)

# Sanitizer run: the unit tests' ASan/UBSan twins, then the monitor's
# integration suites against the sanitized monitor. LeakSanitizer cannot
# run inside the seccomp sandbox (it needs ptrace); leaks are checked by
# valgrind in tests/integration/valgrind.bats instead.
ASAN_SUITES := tests/integration/boot.bats tests/integration/traps.bats \
	tests/integration/hostile.bats tests/integration/badelf.bats \
	tests/integration/block.bats tests/integration/channel.bats \
	tests/threat/t3_userspace.bats tests/threat/t4_emulation.bats
check-asan: all $(ASAN_TESTS) $(O)/san/cloak
	CLOAK_BIN=$(abspath $(O)/san/cloak) ASAN_OPTIONS=detect_leaks=0:abort_on_error=0 \
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		tests/harness/run-tests $(ASAN_TESTS) $(ASAN_SUITES)

# The whole tree (everything `all` builds, guests included) with clang, in
# a build directory of its own, warnings errors as in every build: what
# the README's "warning-free under gcc and clang" rests on (CI runs it).
# Its host code unoptimized and without debug information: clang's
# warnings come from its front end, whatever the optimization, and the
# build costs a third less (_FORTIFY_SOURCE, which needs optimization, is
# undefined for it). Guests keep their own flags.
CLANG_O ?= $(O)-clang
CLEAN_FILES += $(CLANG_O)
check-clang:
	$(MAKE) --no-print-directory O=$(CLANG_O) CC=clang GUEST_CC=clang \
		EXTRA_CFLAGS="-O0 -g0 -U_FORTIFY_SOURCE $(EXTRA_CFLAGS)" all

bench: all
	bench/run-benches $(BENCHES)
# What `make bench` runs, one a line (structure.bats: all of it is built by `all`).
.PHONY: bench-list
bench-list:
	@printf '%s\n' $(BENCHES)
# What `all` builds, one a line (tests/mutants/run-mutants builds a
# mutant's share of it).
.PHONY: targets-list
targets-list:
	@printf '%s\n' $(ALL_TARGETS)

clean:
	rm -rf $(O) $(CLEAN_FILES)

$(O)/%/:
	mkdir -p $@

# Objects made on the way to a program are kept: deleting them would only
# make the next build rebuild them.
.SECONDARY:

# SPDX-License-Identifier: ISC
# libFuzzer targets and `make fuzz-smoke`, which runs each for a bounded time
# and fails on any crash, sanitizer report or broken invariant.
#
# A target NAME is tests/fuzz/fuzz_NAME.c defining LLVMFuzzerTestOneInput;
# add it with `FUZZ_TARGETS += NAME` in a tests/fuzz/*.mk fragment. Optional:
#   a rule for $(O)/fuzz/seeds/NAME.stamp that fills $(O)/fuzz/seeds/NAME/
#     (otherwise the target starts from an empty corpus),
#   tests/fuzz/NAME.dict, a libFuzzer dictionary,
#   FUZZ_ARGS_NAME, extra libFuzzer options.
# The fuzzers are built by clang whatever $(CC) is: the monitor and common
# sources are compiled here again with the fuzzer's coverage and ASan/UBSan.
# Each target runs FUZZ_SECONDS: 60 s shared between the targets, at least
# 12 s each (override: make fuzz-smoke FUZZ_SECONDS=300). The corpus grows in
# $(O)/fuzz/corpus/NAME across runs; crash inputs land in $(O)/fuzz/.

FUZZ_TARGETS += elf_load
FUZZ_CC ?= clang
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
# Warnings are enforced by the gcc and CC=clang builds; here they would only
# make the smoke run fail for a reason that is not a crash.
FUZZ_CFLAGS := -std=gnu11 -g -O1 $(filter-out -Werror,$(WARN)) -Iinclude -Icommon -Imonitor -I$(O)/monitor \
	-D_GNU_SOURCE -DCLOAK_VERSION=\"$(VERSION)\" -fno-strict-aliasing $(FUZZ_SAN)
# Recursive on purpose: fragments included after this one add targets.
FUZZ_SECONDS ?= $(shell n=$(words $(FUZZ_TARGETS)); s=$$((60 / n)); [ $$s -lt 12 ] && s=12; echo $$s)

FUZZ_LIB_SRC = $(MONITOR_SRC) $(COMMON_SRC)
FUZZ_LIB_OBJ = $(FUZZ_LIB_SRC:%.c=$(O)/fuzz/obj/%.o)

$(O)/fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c -o $@ $<
# The key services' sources, as their host builds (services/common/build.mk).
$(O)/fuzz/obj/services/%.o: FUZZ_CFLAGS += $(SERVICES_CFLAGS)
$(O)/fuzz/obj/monitor/process/sandbox.o: $(O)/monitor/sandbox_bpf.h
$(O)/fuzz/libmonitor-fuzz.a: $(FUZZ_LIB_OBJ)
	rm -f $@ && ar rcs $@ $^
$(O)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(O)/fuzz/libmonitor-fuzz.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(O)/fuzz/libmonitor-fuzz.a $(MONITOR_LIBS)
$(O)/fuzz/seeds/%.stamp:
	mkdir -p $(O)/fuzz/seeds/$*
	touch $@
# Every depth: monitor/mem/x.d as well as common/x.d, so a changed header
# rebuilds every fuzz object that includes it.
-include $(shell find $(O)/fuzz/obj -name "*.d" 2>/dev/null)

# Seeds of the ELF loader: the unit tests' synthetic guest, hello.elf if it
# is built, and mkbadelf's malformed variants of both.
$(O)/fuzz/seeds/elf_load.stamp: $(O)/tests/mkbadelf $(wildcard $(O)/examples/hello.elf)
	rm -rf $(O)/fuzz/seeds/elf_load && mkdir -p $(O)/fuzz/seeds/elf_load
	$(O)/tests/mkbadelf --synth $(O)/fuzz/seeds/elf_load/synth.elf
	$(O)/tests/mkbadelf $(O)/fuzz/seeds/elf_load/synth.elf $(O)/fuzz/seeds/elf_load/synth-bad
	if [ -f $(O)/examples/hello.elf ]; then \
		cp $(O)/examples/hello.elf $(O)/fuzz/seeds/elf_load/hello.elf && \
		$(O)/tests/mkbadelf $(O)/examples/hello.elf $(O)/fuzz/seeds/elf_load/hello-bad; fi
	touch $@
# Guest ELF headers and segments sit in the first few KiB; longer inputs
# only slow the mutations down.
FUZZ_ARGS_elf_load := -max_len=32768

# One target's run; expanded per target into separate recipe lines.
define fuzz_run
mkdir -p $(O)/fuzz/corpus/$(1)
echo "fuzz-smoke: $(1) for $(FUZZ_SECONDS) s"
$(O)/fuzz/fuzz_$(1) -max_total_time=$(FUZZ_SECONDS) -timeout=10 -print_final_stats=1 -artifact_prefix=$(O)/fuzz/crash-$(1)- $(if $(wildcard tests/fuzz/$(1).dict),-dict=tests/fuzz/$(1).dict) $(FUZZ_ARGS_$(1)) $(O)/fuzz/corpus/$(1) $(O)/fuzz/seeds/$(1)

endef

# The list of targets is complete only once every fragment is read, so the
# recipe (expanded when it runs) builds them through a sub-make.
fuzz-smoke:
	$(MAKE) --no-print-directory $(foreach t,$(FUZZ_TARGETS),$(O)/fuzz/fuzz_$(t) $(O)/fuzz/seeds/$(t).stamp)
	$(foreach t,$(FUZZ_TARGETS),$(call fuzz_run,$(t)))
	@echo "fuzz-smoke: no crash in $(FUZZ_TARGETS)"

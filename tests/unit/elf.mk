# SPDX-License-Identifier: ISC
# ELF loader: its unit test, the test-image builder it shares with mkbadelf
# and the fuzz corpus, and mkbadelf (writes malformed guests for
# tests/integration/badelf.bats: mkbadelf GUEST.elf OUTDIR).
ELF_BUILDER_OBJ := $(O)/tests/obj/elf_builder.o

$(O)/tests/obj/elf_builder.o: tests/unit/elf_builder.c tests/unit/elf_builder.h
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -c -o $@ $<
$(O)/san/tests/obj/elf_builder.o: tests/unit/elf_builder.c tests/unit/elf_builder.h
	@mkdir -p $(dir $@)
	$(CC) $(SAN_CFLAGS) -c -o $@ $<

$(eval $(call unit_test,test_elf_load,$(ELF_BUILDER_OBJ),))
$(O)/tests/test_elf_load $(O)/san/tests/test_elf_load: tests/unit/elf_builder.h monitor/setup/elf_load.h

$(O)/tests/mkbadelf: tests/unit/mkbadelf.c $(ELF_BUILDER_OBJ) tests/unit/elf_builder.h
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -o $@ $< $(ELF_BUILDER_OBJ) $(HOST_LDFLAGS)
ALL_TARGETS += $(O)/tests/mkbadelf

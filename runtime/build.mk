# SPDX-License-Identifier: ISC
# The guest runtime. GUEST_ABI_CFLAGS and GUEST_ABI_LDFLAGS are the one list
# of flags every guest is built with: the tree's own guests use them here,
# and `make install` writes them into cloak-guest.pc for guests built
# elsewhere. Freestanding, no SSE/AVX (a KVM that emulates guest code
# cannot do SSE arithmetic), no red zone (exceptions push onto the stack).
GUEST_ABI_CFLAGS := -ffreestanding -nostdlib -mno-red-zone -mgeneral-regs-only -fno-pic \
        -fno-pie -fno-stack-protector -fno-asynchronous-unwind-tables -mcmodel=small \
        -fcf-protection=none
GUEST_ABI_LDFLAGS := -nostdlib -static -Wl,--build-id=none -Wl,-z,noexecstack \
        -Wl,-z,max-page-size=4096
# Each function and object in a section of its own, and the link drops the
# ones nothing uses: a guest's image holds only the runtime code it calls,
# and every page of it costs a fault into protected memory at boot.
GUEST_CFLAGS := -std=gnu11 -O2 -g $(WARN) $(GUEST_ABI_CFLAGS) -fno-builtin-malloc \
        -ffunction-sections -fdata-sections -Iinclude -Iruntime/include
GUEST_LDFLAGS := $(GUEST_ABI_LDFLAGS) -Wl,--gc-sections -Wl,-L,runtime -Wl,-T,runtime/guest.ld

RUNTIME_SRC := $(wildcard runtime/*.c runtime/*.S runtime/libc/*.c)
RUNTIME_OBJ := $(patsubst %,$(O)/guest/%.o,$(basename $(RUNTIME_SRC)))

$(O)/guest/%.o: %.c
	@mkdir -p $(dir $@)
	$(GUEST_CC) $(GUEST_CFLAGS) -MMD -MP -c -o $@ $<
$(O)/guest/%.o: %.S
	@mkdir -p $(dir $@)
	$(GUEST_CC) $(GUEST_CFLAGS) -MMD -MP -c -o $@ $<

$(O)/runtime/libcloakrt.a: $(RUNTIME_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# $(call guest_elf,OUT,OBJS,EXTRA_LIBS): link a guest against the runtime.
# start.o is linked whole (entry point); the link script puts it first.
define guest_elf
$(1): $(2) $(O)/runtime/libcloakrt.a runtime/guest.ld runtime/idt.ld
	@mkdir -p $$(dir $$@)
	$$(GUEST_CC) $$(GUEST_CFLAGS) $$(GUEST_LDFLAGS) -o $$@ $(O)/guest/runtime/start.o $(2) \
		$(O)/runtime/libcloakrt.a $(3) $(O)/runtime/libcloakrt.a -lgcc
endef

ALL_TARGETS += $(O)/runtime/libcloakrt.a
# Every guest object's header dependencies (runtime, examples, tests, bench
# guests all compile through $(O)/guest/%.o).
-include $(wildcard $(O)/guest/*/*.d $(O)/guest/*/*/*.d $(O)/guest/*/*/*/*.d)

# make install: the runtime, its headers (the ABI header among them, so a
# guest needs one include directory) and cloak-guest.pc, written for the
# PREFIX installed to.
RUNTIME_LIBDIR = $(DESTDIR)$(PREFIX)/lib/cloak
.PHONY: install-runtime
install: install-runtime
install-runtime: $(O)/runtime/libcloakrt.a $(O)/guest/runtime/start.o
	install -d $(RUNTIME_LIBDIR)/include/cloak $(DESTDIR)$(LIBDIR)/pkgconfig \
		$(DESTDIR)$(PREFIX)/include/cloak
	install -m 644 $(O)/runtime/libcloakrt.a $(O)/guest/runtime/start.o runtime/guest.ld \
		runtime/idt.ld $(RUNTIME_LIBDIR)/
	install -m 644 runtime/include/*.h $(RUNTIME_LIBDIR)/include/
	install -m 644 runtime/include/cloak/*.h include/cloak/abi.h $(RUNTIME_LIBDIR)/include/cloak/
	install -m 644 include/cloak/abi.h $(DESTDIR)$(PREFIX)/include/cloak/abi.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' \
		-e 's|@CFLAGS@|$(GUEST_ABI_CFLAGS)|' -e 's|@LDFLAGS@|$(GUEST_ABI_LDFLAGS)|' \
		runtime/cloak-guest.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/cloak-guest.pc

# The guest runtime: freestanding, no SSE/AVX (the emulator on these hosts
# cannot do SSE arithmetic), no red zone (exceptions push onto the stack).
GUEST_CFLAGS := -std=gnu11 -O2 -g $(WARN) -ffreestanding -fno-builtin-malloc \
        -nostdlib -mno-red-zone -mgeneral-regs-only -fno-pic -fno-pie \
        -fno-stack-protector -fno-asynchronous-unwind-tables -mcmodel=small \
        -fcf-protection=none -Iinclude -Iruntime/include
GUEST_LDFLAGS := -nostdlib -static -Wl,-L,runtime -Wl,-T,runtime/guest.ld \
        -Wl,--build-id=none -Wl,-z,noexecstack -Wl,-z,max-page-size=4096

RUNTIME_SRC := $(wildcard runtime/*.c runtime/*.S runtime/libc/*.c)
RUNTIME_OBJ := $(patsubst %,$(O)/guest/%.o,$(basename $(RUNTIME_SRC)))

$(O)/guest/%.o: %.c
	@mkdir -p $(dir $@)
	$(GUEST_CC) $(GUEST_CFLAGS) -MMD -c -o $@ $<
$(O)/guest/%.o: %.S
	@mkdir -p $(dir $@)
	$(GUEST_CC) $(GUEST_CFLAGS) -MMD -c -o $@ $<

$(O)/runtime/libcloakrt.a: $(RUNTIME_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# $(call guest_elf,OUT,OBJS,EXTRA_LIBS): link a guest against the runtime.
# start.o comes first and is linked whole (entry point, ABI note).
define guest_elf
$(1): $(2) $(O)/runtime/libcloakrt.a runtime/guest.ld runtime/idt.ld
	@mkdir -p $$(dir $$@)
	$$(GUEST_CC) $$(GUEST_CFLAGS) $$(GUEST_LDFLAGS) -o $$@ $(O)/guest/runtime/start.o $(2) \
		$(O)/runtime/libcloakrt.a $(3) $(O)/runtime/libcloakrt.a -lgcc
endef

ALL_TARGETS += $(O)/runtime/libcloakrt.a
-include $(RUNTIME_OBJ:.o=.d) $(shell find $(O)/guest -name "*.d" 2>/dev/null)

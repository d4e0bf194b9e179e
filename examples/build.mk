$(eval $(call guest_elf,$(O)/examples/hello.elf,$(O)/guest/examples/hello/hello.o))
ALL_TARGETS += $(O)/examples/hello.elf

# SPDX-License-Identifier: ISC
$(eval $(call guest_elf,$(O)/examples/hello.elf,$(O)/guest/examples/hello/hello.o))
ALL_TARGETS += $(O)/examples/hello.elf
KEYVAULT_OBJ := $(patsubst %.c,$(O)/guest/%.o,$(wildcard examples/keyvault/*.c))
$(eval $(call guest_elf,$(O)/examples/keyvault.elf,$(KEYVAULT_OBJ),/usr/lib/x86_64-linux-gnu/libbearssl.a))
ALL_TARGETS += $(O)/examples/keyvault.elf

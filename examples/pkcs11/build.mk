# SPDX-License-Identifier: ISC
# The PKCS#11 token guest (examples/pkcs11; docs/pkcs11.md), and host
# builds of its modules for the unit tests, the fuzz target and the
# host module (tools/pkcs11). PKCS#11's header is p11-kit's.
P11_KIT_CFLAGS := -I/usr/include/p11-kit-1
# The guest links the store (store.c, p11_persist.c, p11_sodium.c).
P11_SRC := $(filter-out examples/pkcs11/store.c,$(wildcard examples/pkcs11/*.c))
P11_GUEST_OBJ := $(patsubst %.c,$(O)/guest/%.o,$(P11_SRC)) $(O)/guest/examples/pkcs11/store.o \
	$(EXAMPLES_COMMON_OBJ) $(O)/guest/examples/ssh-agent/sodium_shim.o
$(O)/guest/examples/pkcs11/%.o: GUEST_CFLAGS += $(P11_KIT_CFLAGS)
# Mbed TLS in the guest: mbedtls_guest/pthread.h and mbedtls_shim.c.
$(O)/guest/examples/pkcs11/p11_rsa.o: GUEST_CFLAGS += -Iexamples/pkcs11/mbedtls_guest
$(eval $(call guest_elf,$(O)/examples/pkcs11.elf,$(P11_GUEST_OBJ),/usr/lib/x86_64-linux-gnu/libbearssl.a /usr/lib/x86_64-linux-gnu/libmbedcrypto.a /usr/lib/x86_64-linux-gnu/libsodium.a \
	$(NETTLE_STATIC)))
ALL_TARGETS += $(O)/examples/pkcs11.elf
# Installed where tools/cloak-pkcs11 looks for it ($PREFIX/lib/cloak).
.PHONY: install-pkcs11-guest
install: install-pkcs11-guest
install-pkcs11-guest: $(O)/examples/pkcs11.elf
	install -d $(DESTDIR)$(PREFIX)/lib/cloak
	install -m 644 $(O)/examples/pkcs11.elf $(DESTDIR)$(PREFIX)/lib/cloak/pkcs11.elf

P11_HOST_SRC := $(filter-out examples/pkcs11/main.c examples/pkcs11/mbedtls_shim.c \
	examples/pkcs11/p11_persist.c examples/pkcs11/p11_sodium.c,$(P11_SRC))
P11_HOST_OBJ := $(P11_HOST_SRC:%.c=$(O)/host/%.o) $(ECDSA_HOST_OBJ)
$(O)/host/examples/pkcs11/%.o: examples/pkcs11/%.c
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) $(P11_KIT_CFLAGS) -fPIC -MMD -c -o $@ $<
$(O)/san/host/examples/pkcs11/%.o: examples/pkcs11/%.c
	@mkdir -p $(dir $@)
	$(CC) $(SAN_CFLAGS) $(P11_KIT_CFLAGS) -MMD -c -o $@ $<
-include $(P11_HOST_OBJ:.o=.d) $(P11_HOST_OBJ:$(O)/%.o=$(O)/san/%.d)

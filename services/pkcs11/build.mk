# SPDX-License-Identifier: ISC
# The PKCS#11 token (docs/pkcs11.md): its guest (guest/), installed as
# lib/cloak/pkcs11.elf; libcloak-pkcs11.so, the module that holds no key
# (module/); its launcher cloak-pkcs11; and host builds of the guest's
# modules for the unit tests and the fuzz targets. PKCS#11's header is
# p11-kit's. The store (guest/store.c, docs/pkcs11-store.md) is linked into
# the guest and built for the host's unit test and fuzz target.
P11_KIT_CFLAGS := -I/usr/include/p11-kit-1
P11_CFLAGS := $(P11_KIT_CFLAGS) -Iservices/pkcs11/guest
$(O)/guest/services/pkcs11/%.o $(O)/host/services/pkcs11/%.o $(O)/san/host/services/pkcs11/%.o: \
	SERVICES_CFLAGS += $(P11_CFLAGS)
# Mbed TLS in the guest: mbedtls_guest/pthread.h and mbedtls_shim.c.
$(O)/guest/services/pkcs11/guest/p11_rsa.o $(O)/guest/services/pkcs11/guest/p11_pkcs8.o: \
	GUEST_CFLAGS += -Iservices/pkcs11/guest/mbedtls_guest
# OpenSSL's headers want a hosted C library's (<stdio.h>, <time.h>,
# <sys/types.h>): for p11_ossl.c (guest/p11_ossl.h) the system's come
# first, the runtime's after (its <cloak/*.h>); the functions they name are
# the runtime's and services/common/openssl_shim.c's. (This assignment
# replaces the pattern rules' additions above: they are repeated.)
$(O)/guest/services/pkcs11/guest/p11_ossl.o: GUEST_CFLAGS := $(filter-out -Iruntime/include,$(GUEST_CFLAGS)) \
	-idirafter runtime/include $(SERVICES_CFLAGS) $(P11_CFLAGS)
P11_SRC := $(wildcard services/pkcs11/guest/*.c)
P11_GUEST_OBJ := $(patsubst %.c,$(O)/guest/%.o,$(P11_SRC)) $(SERVICES_COMMON_OBJ)
# libcrypto.a first: it needs nothing of the other archives, and they
# need nothing of it (OpenSSL's libc is the runtime and the shims).
$(eval $(call guest_elf,$(O)/services/pkcs11.elf,$(P11_GUEST_OBJ),/usr/lib/x86_64-linux-gnu/libcrypto.a \
	/usr/lib/x86_64-linux-gnu/libbearssl.a /usr/lib/x86_64-linux-gnu/libmbedcrypto.a /usr/lib/x86_64-linux-gnu/libsodium.a \
	$(NETTLE_STATIC)))
ALL_TARGETS += $(O)/services/pkcs11.elf

# Host builds: the token proper (no main.c, no store glue, no guest shims)
# and, apart, the store. What links P11_HOST_OBJ adds P11_HOST_LIBS
# (libcrypto shared: the host's OpenSSL picks its code by CPUID itself).
P11_HOST_SRC := $(filter-out services/pkcs11/guest/main.c services/pkcs11/guest/mbedtls_shim.c \
	services/pkcs11/guest/p11_persist.c services/pkcs11/guest/p11_sodium.c \
	services/pkcs11/guest/store.c,$(P11_SRC))
P11_HOST_OBJ := $(P11_HOST_SRC:%.c=$(O)/host/%.o) $(ECDSA_HOST_OBJ) $(WIRE_HOST_OBJ)
P11_STORE_HOST_OBJ := $(O)/host/services/pkcs11/guest/store.o
P11_HOST_LIBS := -l:libbearssl.a -l:libmbedcrypto.a -l:libsodium.a $(NETTLE_LIBS) -lcrypto

# The module, and the launcher copied next to the monitor.
P11_MODULE := $(O)/pkcs11/libcloak-pkcs11.so
P11_MODULE_OBJ := $(patsubst %.c,$(O)/host/%.o,$(wildcard services/pkcs11/module/*.c)) \
	$(O)/host/services/pkcs11/guest/p11_wire.o $(WIRE_HOST_OBJ)
$(P11_MODULE): $(P11_MODULE_OBJ) services/pkcs11/module/module.map
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) $(HOST_LDFLAGS) -fPIC -shared -fvisibility=hidden \
		-Wl,--version-script=services/pkcs11/module/module.map -Wl,-z,defs -o $@ \
		$(P11_MODULE_OBJ) -lpthread
$(O)/host/services/pkcs11/module/%.o: SERVICES_CFLAGS += -fvisibility=hidden
$(O)/cloak-pkcs11: services/pkcs11/cloak-pkcs11
	@mkdir -p $(dir $@)
	cp $< $@ && chmod 755 $@
ALL_TARGETS += $(P11_MODULE) $(O)/cloak-pkcs11

# The guest where cloak-pkcs11 looks for it ($PREFIX/lib/cloak); the
# module where p11-kit's own modules live under LIBDIR, and the module
# file where p11-kit reads configuration under PREFIX (p11-kit finds it
# when PREFIX is /usr; elsewhere point P11_KIT's user config at it:
# docs/pkcs11.md).
.PHONY: install-pkcs11
install: install-pkcs11
install-pkcs11: $(O)/services/pkcs11.elf $(P11_MODULE)
	install -d $(DESTDIR)$(PREFIX)/lib/cloak $(DESTDIR)$(LIBDIR)/pkcs11 \
		$(DESTDIR)$(PREFIX)/share/p11-kit/modules $(DESTDIR)$(PREFIX)/bin \
		$(DESTDIR)$(PREFIX)/share/man/man1
	install -m 644 $(O)/services/pkcs11.elf $(DESTDIR)$(PREFIX)/lib/cloak/pkcs11.elf
	install -m 644 man/cloak-pkcs11.1 $(DESTDIR)$(PREFIX)/share/man/man1/cloak-pkcs11.1
	install -m 755 $(P11_MODULE) $(DESTDIR)$(LIBDIR)/pkcs11/libcloak-pkcs11.so
	sed 's|^module: .*|module: $(LIBDIR)/pkcs11/libcloak-pkcs11.so|' \
		services/pkcs11/module/cloak-pkcs11.module \
		> $(DESTDIR)$(PREFIX)/share/p11-kit/modules/cloak-pkcs11.module
	chmod 644 $(DESTDIR)$(PREFIX)/share/p11-kit/modules/cloak-pkcs11.module
	install -m 755 services/pkcs11/cloak-pkcs11 $(DESTDIR)$(PREFIX)/bin/cloak-pkcs11

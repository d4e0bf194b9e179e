# SPDX-License-Identifier: ISC
# libcloak-pkcs11.so, the PKCS#11 module of the token guest (docs/pkcs11.md),
# its launcher tools/cloak-pkcs11 and its p11-kit module file.
P11_MODULE := $(O)/pkcs11/libcloak-pkcs11.so
P11_MODULE_SRC := tools/pkcs11/module.c tools/pkcs11/rpc.c tools/pkcs11/sign_memo.c
$(P11_MODULE): $(P11_MODULE_SRC) tools/pkcs11/rpc.h tools/pkcs11/sign_memo.h tools/pkcs11/module.map \
		$(O)/host/examples/pkcs11/p11_wire.o examples/pkcs11/p11_wire.h
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) $(P11_KIT_CFLAGS) -fPIC -shared -fvisibility=hidden \
		-Wl,--version-script=tools/pkcs11/module.map -Wl,-z,defs -o $@ \
		$(P11_MODULE_SRC) $(O)/host/examples/pkcs11/p11_wire.o -lpthread
$(O)/cloak-pkcs11: tools/cloak-pkcs11 | $(O)/
	cp $< $@ && chmod 755 $@
ALL_TARGETS += $(P11_MODULE) $(O)/cloak-pkcs11

# The module where p11-kit's own modules live under PREFIX, and the module
# file where p11-kit reads configuration under PREFIX (p11-kit finds it when
# PREFIX is /usr; elsewhere point P11_KIT's user config at it: docs/pkcs11.md).
.PHONY: install-pkcs11
install: install-pkcs11
install-pkcs11: $(P11_MODULE)
	install -d $(DESTDIR)$(PREFIX)/lib/pkcs11 $(DESTDIR)$(PREFIX)/share/p11-kit/modules $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(P11_MODULE) $(DESTDIR)$(PREFIX)/lib/pkcs11/libcloak-pkcs11.so
	sed 's|^module: .*|module: $(PREFIX)/lib/pkcs11/libcloak-pkcs11.so|' tools/pkcs11/cloak-pkcs11.module \
		> $(DESTDIR)$(PREFIX)/share/p11-kit/modules/cloak-pkcs11.module
	chmod 644 $(DESTDIR)$(PREFIX)/share/p11-kit/modules/cloak-pkcs11.module
	install -m 755 tools/cloak-pkcs11 $(DESTDIR)$(PREFIX)/bin/cloak-pkcs11

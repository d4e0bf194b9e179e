# SPDX-License-Identifier: ISC
# libcloak-pkcs11.so loaded as programs load it (test_p11_module.c).
$(eval $(call unit_test,test_p11_module,,))
$(O)/tests/test_p11_module: HOST_CFLAGS += $(P11_KIT_CFLAGS)
$(O)/san/tests/test_p11_module: SAN_CFLAGS += $(P11_KIT_CFLAGS)
$(O)/tests/test_p11_module $(O)/san/tests/test_p11_module: $(P11_MODULE)

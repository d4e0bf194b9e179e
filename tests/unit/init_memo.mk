# SPDX-License-Identifier: ISC
# The PKCS#11 module's memory of the inits the token accepted, deferred
# C_SignInit, C_EncryptInit and C_DecryptInit (test_init_memo.c; the
# object from services/pkcs11/build.mk).
INIT_MEMO_OBJ := $(O)/host/services/pkcs11/module/init_memo.o
$(eval $(call unit_test,test_init_memo,$(INIT_MEMO_OBJ)))
$(O)/tests/test_init_memo: HOST_CFLAGS += $(SERVICES_CFLAGS) $(P11_CFLAGS) -Iservices/pkcs11/module
$(O)/san/tests/test_init_memo: SAN_CFLAGS += $(SERVICES_CFLAGS) $(P11_CFLAGS) -Iservices/pkcs11/module
$(O)/tests/test_init_memo $(O)/san/tests/test_init_memo: services/pkcs11/module/init_memo.h

# SPDX-License-Identifier: ISC
# The PKCS#11 module's memory of accepted C_SignInit calls (test_sign_memo.c;
# the object from services/pkcs11/build.mk).
SIGN_MEMO_OBJ := $(O)/host/services/pkcs11/module/sign_memo.o
$(eval $(call unit_test,test_sign_memo,$(SIGN_MEMO_OBJ)))
$(O)/tests/test_sign_memo: HOST_CFLAGS += $(SERVICES_CFLAGS) $(P11_CFLAGS) -Iservices/pkcs11/module
$(O)/san/tests/test_sign_memo: SAN_CFLAGS += $(SERVICES_CFLAGS) $(P11_CFLAGS) -Iservices/pkcs11/module
$(O)/tests/test_sign_memo $(O)/san/tests/test_sign_memo: services/pkcs11/module/sign_memo.h

# SPDX-License-Identifier: ISC
# The PKCS#11 module's memory of accepted C_SignInit calls (test_sign_memo.c).
SIGN_MEMO_OBJ := $(O)/host/tools/pkcs11/sign_memo.o
$(O)/host/tools/pkcs11/sign_memo.o: tools/pkcs11/sign_memo.c tools/pkcs11/sign_memo.h
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) $(P11_KIT_CFLAGS) -c -o $@ $<
$(O)/san/host/tools/pkcs11/sign_memo.o: tools/pkcs11/sign_memo.c tools/pkcs11/sign_memo.h
	@mkdir -p $(dir $@)
	$(CC) $(SAN_CFLAGS) $(P11_KIT_CFLAGS) -c -o $@ $<
$(eval $(call unit_test,test_sign_memo,$(SIGN_MEMO_OBJ)))
$(O)/tests/test_sign_memo: HOST_CFLAGS += $(P11_KIT_CFLAGS)
$(O)/san/tests/test_sign_memo: SAN_CFLAGS += $(P11_KIT_CFLAGS)
$(O)/tests/test_sign_memo $(O)/san/tests/test_sign_memo: tools/pkcs11/sign_memo.h

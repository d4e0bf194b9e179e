# SPDX-License-Identifier: ISC
# The token's ECDSA against BearSSL's RFC 6979 signer (test_p11_ec.c).
P11_EC_OBJ := $(O)/host/services/pkcs11/guest/p11_ec.o $(O)/host/services/pkcs11/guest/p11_ossl.o $(ECDSA_HOST_OBJ)
$(eval $(call unit_test,test_p11_ec,$(P11_EC_OBJ),$(P11_HOST_LIBS)))
$(O)/tests/test_p11_ec: HOST_CFLAGS += $(SERVICES_CFLAGS) $(P11_CFLAGS)
$(O)/san/tests/test_p11_ec: SAN_CFLAGS += $(SERVICES_CFLAGS) $(P11_CFLAGS)
$(O)/tests/test_p11_ec $(O)/san/tests/test_p11_ec: services/pkcs11/guest/p11_ec.h services/common/ecdsa.h

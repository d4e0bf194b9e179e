# SPDX-License-Identifier: ISC
# The token's ECDSA against BearSSL's RFC 6979 signer (test_p11_ec.c).
P11_EC_OBJ := $(O)/host/examples/pkcs11/p11_ec.o $(ECDSA_HOST_OBJ)
$(eval $(call unit_test,test_p11_ec,$(P11_EC_OBJ),-l:libbearssl.a $(NETTLE_LIBS)))
$(O)/tests/test_p11_ec $(O)/san/tests/test_p11_ec: examples/pkcs11/p11_ec.h examples/common/ecdsa.h

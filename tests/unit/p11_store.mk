# SPDX-License-Identifier: ISC
# The PKCS#11 token's store (services/pkcs11/guest/store.c; objects from
# services/pkcs11/build.mk), against the host's libsodium.
$(eval $(call unit_test,test_p11_store,$(P11_STORE_HOST_OBJ),-lsodium))
$(O)/tests/test_p11_store: HOST_CFLAGS += $(SERVICES_CFLAGS) $(P11_CFLAGS)
$(O)/san/tests/test_p11_store: SAN_CFLAGS += $(SERVICES_CFLAGS) $(P11_CFLAGS)
$(O)/tests/test_p11_store $(O)/san/tests/test_p11_store: services/pkcs11/guest/store.h

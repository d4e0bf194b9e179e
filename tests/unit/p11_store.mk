# SPDX-License-Identifier: ISC
# The PKCS#11 token's store (examples/pkcs11/store.c; objects from
# examples/build.mk), against the host's libsodium.
$(eval $(call unit_test,test_p11_store,$(P11_STORE_HOST_OBJ),-lsodium))
$(O)/tests/test_p11_store $(O)/san/tests/test_p11_store: examples/pkcs11/store.h

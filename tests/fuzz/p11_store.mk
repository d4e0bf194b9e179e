# SPDX-License-Identifier: ISC
# The PKCS#11 token's store (fuzz_p11_store.c) on made-up images, built from
# the guest's source against the host's libsodium. Seeds: real stores,
# written by the unit test (test_p11_store --fuzz-seeds DIR).
FUZZ_TARGETS += p11_store
$(O)/fuzz/fuzz_p11_store: tests/fuzz/fuzz_p11_store.c $(O)/fuzz/obj/services/pkcs11/guest/store.o services/pkcs11/guest/store.h
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(SERVICES_CFLAGS) $(P11_CFLAGS) -fsanitize=fuzzer -o $@ $< $(O)/fuzz/obj/services/pkcs11/guest/store.o -lsodium
$(O)/fuzz/seeds/p11_store.stamp: $(O)/tests/test_p11_store
	rm -rf $(O)/fuzz/seeds/p11_store && mkdir -p $(O)/fuzz/seeds/p11_store
	$(O)/tests/test_p11_store --fuzz-seeds $(O)/fuzz/seeds/p11_store
	touch $@
# Two header sectors and the first sectors of each data slot hold all a
# seed has; longer inputs only slow the mutations down.
FUZZ_ARGS_p11_store := -max_len=8192

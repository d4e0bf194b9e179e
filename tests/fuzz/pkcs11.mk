# SPDX-License-Identifier: ISC
# The PKCS#11 token guest's frame decoder and request handler
# (fuzz_pkcs11.c), built from the same sources as the guest against the
# host's BearSSL and Mbed TLS.
FUZZ_TARGETS += pkcs11
P11_FUZZ_OBJ = $(P11_HOST_SRC:%.c=$(O)/fuzz/obj/%.o) $(O)/fuzz/obj/services/common/ecdsa.o \
	$(O)/fuzz/obj/services/common/wire.o
$(O)/fuzz/obj/services/pkcs11/%.o: FUZZ_CFLAGS += $(P11_CFLAGS)
$(O)/fuzz/fuzz_pkcs11: tests/fuzz/fuzz_pkcs11.c $(P11_FUZZ_OBJ) $(wildcard services/pkcs11/guest/*.h)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(SERVICES_CFLAGS) $(P11_CFLAGS) -fsanitize=fuzzer -o $@ $< $(P11_FUZZ_OBJ) $(P11_HOST_LIBS)
FUZZ_ARGS_pkcs11 := -max_len=8192
$(O)/fuzz/seeds/pkcs11.stamp: tests/fuzz/pkcs11_seeds.py
	rm -rf $(O)/fuzz/seeds/pkcs11
	tests/fuzz/pkcs11_seeds.py $(O)/fuzz/seeds/pkcs11
	touch $@

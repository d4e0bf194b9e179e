# SPDX-License-Identifier: ISC
# PKCS#11 benchmark (docs/pkcs11.md): the token guest against SoftHSM2 and a key file.
PKCS11_BENCH_DEPS := $(O)/cloak $(O)/services/pkcs11.elf $(O)/pkcs11/libcloak-pkcs11.so
bench/pkcs11-bench: $(PKCS11_BENCH_DEPS)
BENCHES += bench/pkcs11-bench

# SPDX-License-Identifier: ISC
# Host-side helper commands.
$(O)/cloak-keyvault: tools/cloak-keyvault.c examples/keyvault/protocol.h | $(O)/
	$(CC) $(HOST_CFLAGS) -o $@ $< -lcrypto
ALL_TARGETS += $(O)/cloak-keyvault

# bench/build.mk does not include fragments yet; io.mk guards itself, so
# including it here too is harmless once it does.
-include bench/io.mk

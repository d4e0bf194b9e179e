# Host-side helper commands.
$(O)/cloak-keyvault: tools/cloak-keyvault.c examples/keyvault/protocol.h | $(O)/
	$(CC) $(HOST_CFLAGS) -o $@ $< -lcrypto
ALL_TARGETS += $(O)/cloak-keyvault

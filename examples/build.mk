# SPDX-License-Identifier: ISC
$(eval $(call guest_elf,$(O)/examples/hello.elf,$(O)/guest/examples/hello/hello.o))
ALL_TARGETS += $(O)/examples/hello.elf
# What the key service guests (the ssh-agent, the PKCS#11 token) share
# (examples/common): the entropy mix, the shims Debian's prebuilt libraries
# need and the timeout options, guest side only; and ECDSA (ecdsa.c), built
# for the host's tests too, on Debian's Nettle and GMP, static in the guests.
EXAMPLES_COMMON_OBJ := $(patsubst %.c,$(O)/guest/%.o,$(wildcard examples/common/*.c))
NETTLE_STATIC := $(addprefix /usr/lib/x86_64-linux-gnu/,libhogweed.a libnettle.a libgmp.a)
NETTLE_LIBS := -l:libhogweed.a -l:libnettle.a -l:libgmp.a
ECDSA_HOST_OBJ := $(O)/host/examples/common/ecdsa.o
$(O)/host/examples/common/ecdsa.o: examples/common/ecdsa.c
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -MMD -c -o $@ $<
$(O)/san/host/examples/common/ecdsa.o: examples/common/ecdsa.c
	@mkdir -p $(dir $@)
	$(CC) $(SAN_CFLAGS) -MMD -c -o $@ $<
-include $(ECDSA_HOST_OBJ:.o=.d) $(ECDSA_HOST_OBJ:$(O)/%.o=$(O)/san/%.d)
# The ssh-agent guest (examples/ssh-agent; docs/ssh-agent.md). Ed25519 is
# Debian's libsodium.a, of which only the signing objects are linked
# (sodium_shim.c supplies what they call).
SSH_AGENT_OBJ := $(patsubst %.c,$(O)/guest/%.o,$(wildcard examples/ssh-agent/*.c)) \
	$(EXAMPLES_COMMON_OBJ)
$(eval $(call guest_elf,$(O)/examples/ssh-agent.elf,$(SSH_AGENT_OBJ),/usr/lib/x86_64-linux-gnu/libbearssl.a /usr/lib/x86_64-linux-gnu/libsodium.a \
	$(NETTLE_STATIC)))
ALL_TARGETS += $(O)/examples/ssh-agent.elf
# Installed where tools/cloak-ssh-agent looks for it ($PREFIX/lib/cloak).
.PHONY: install-ssh-agent-guest
install: install-ssh-agent-guest
install-ssh-agent-guest: $(O)/examples/ssh-agent.elf
	install -d $(DESTDIR)$(PREFIX)/lib/cloak
	install -m 644 $(O)/examples/ssh-agent.elf $(DESTDIR)$(PREFIX)/lib/cloak/ssh-agent.elf
# Host builds of the agent's modules (all but the guest's main.c), for
# unit tests, the fuzz target and the host tools; plus sanitizer twins.
SSH_AGENT_HOST_SRC := $(filter-out examples/ssh-agent/main.c examples/ssh-agent/sodium_shim.c,\
	$(wildcard examples/ssh-agent/*.c))
SSH_AGENT_HOST_OBJ := $(SSH_AGENT_HOST_SRC:%.c=$(O)/host/%.o) $(ECDSA_HOST_OBJ)
$(O)/host/examples/ssh-agent/%.o: examples/ssh-agent/%.c
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -MMD -c -o $@ $<
$(O)/san/host/examples/ssh-agent/%.o: examples/ssh-agent/%.c
	@mkdir -p $(dir $@)
	$(CC) $(SAN_CFLAGS) -MMD -c -o $@ $<
-include $(SSH_AGENT_HOST_OBJ:.o=.d) $(SSH_AGENT_HOST_OBJ:$(O)/%.o=$(O)/san/%.d)
# The PKCS#11 token's store (examples/pkcs11/store.c, docs/pkcs11-store.md):
# compiled for the token guest (examples/pkcs11/build.mk) and for the host's unit
# test and fuzz target (tests/unit/p11_store.mk, tests/fuzz/p11_store.mk).
ALL_TARGETS += $(O)/guest/examples/pkcs11/store.o
P11_STORE_HOST_OBJ := $(O)/host/examples/pkcs11/store.o
$(O)/host/examples/pkcs11/store.o $(O)/san/host/examples/pkcs11/store.o: examples/pkcs11/store.h
$(O)/host/examples/pkcs11/store.o: examples/pkcs11/store.c
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -MMD -c -o $@ $<
$(O)/san/host/examples/pkcs11/store.o: examples/pkcs11/store.c
	@mkdir -p $(dir $@)
	$(CC) $(SAN_CFLAGS) -MMD -c -o $@ $<
include examples/pkcs11/build.mk

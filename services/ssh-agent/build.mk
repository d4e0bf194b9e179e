# SPDX-License-Identifier: ISC
# The SSH agent (docs/ssh-agent.md): its guest (guest/), installed as
# lib/cloak/ssh-agent.elf; its launcher cloak-ssh-agent and the in-guest
# key generation client cloak-ssh-keygen, copied next to the monitor so
# they find build/cloak and build/services/ssh-agent.elf. Ed25519 is
# Debian's libsodium.a, of which only the signing objects are linked
# (services/common/sodium_shim.c supplies what they call).
SSH_AGENT_OBJ := $(patsubst %.c,$(O)/guest/%.o,$(wildcard services/ssh-agent/guest/*.c)) \
	$(SERVICES_COMMON_OBJ)
$(eval $(call guest_elf,$(O)/services/ssh-agent.elf,$(SSH_AGENT_OBJ),/usr/lib/x86_64-linux-gnu/libbearssl.a /usr/lib/x86_64-linux-gnu/libsodium.a \
	$(NETTLE_STATIC)))
ALL_TARGETS += $(O)/services/ssh-agent.elf

# Host builds of the agent's modules (all but the guest's main.c), for
# unit tests, the fuzz target and cloak-ssh-keygen.
SSH_AGENT_CFLAGS := -Iservices/ssh-agent/guest
SSH_AGENT_HOST_SRC := $(filter-out services/ssh-agent/guest/main.c,$(wildcard services/ssh-agent/guest/*.c))
SSH_AGENT_HOST_OBJ := $(SSH_AGENT_HOST_SRC:%.c=$(O)/host/%.o) $(ECDSA_HOST_OBJ) $(WIRE_HOST_OBJ)

$(O)/cloak-ssh-agent: services/ssh-agent/cloak-ssh-agent
	@mkdir -p $(dir $@)
	cp $< $@ && chmod 755 $@
KEYGEN_OBJ := $(O)/host/services/ssh-agent/guest/agent_wire.o $(WIRE_HOST_OBJ)
$(O)/cloak-ssh-keygen: services/ssh-agent/cloak-ssh-keygen.c $(KEYGEN_OBJ) \
		services/ssh-agent/guest/agent_wire.h services/common/wire.h
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) $(HOST_LDFLAGS) $(SERVICES_CFLAGS) $(SSH_AGENT_CFLAGS) -o $@ $< $(KEYGEN_OBJ) -lcrypto
ALL_TARGETS += $(O)/cloak-ssh-agent $(O)/cloak-ssh-keygen

# The guest where cloak-ssh-agent looks for it ($PREFIX/lib/cloak), and
# the two commands with their man pages.
.PHONY: install-ssh-agent
install: install-ssh-agent
install-ssh-agent: $(O)/services/ssh-agent.elf $(O)/cloak-ssh-keygen
	install -d $(DESTDIR)$(PREFIX)/lib/cloak $(DESTDIR)$(PREFIX)/bin \
		$(DESTDIR)$(PREFIX)/share/man/man1
	install -m 644 $(O)/services/ssh-agent.elf $(DESTDIR)$(PREFIX)/lib/cloak/ssh-agent.elf
	install -m 644 man/cloak-ssh-agent.1 man/cloak-ssh-keygen.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 755 services/ssh-agent/cloak-ssh-agent $(DESTDIR)$(PREFIX)/bin/cloak-ssh-agent
	install -m 755 $(O)/cloak-ssh-keygen $(DESTDIR)$(PREFIX)/bin/cloak-ssh-keygen

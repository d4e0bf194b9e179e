# SPDX-License-Identifier: ISC
# Host-side helper commands.
# The ssh-agent's host commands (docs/ssh-agent.md): the start/stop wrapper,
# copied next to the monitor so it finds build/cloak and
# build/examples/ssh-agent.elf, and the in-guest key generation client.
$(O)/cloak-ssh-agent: tools/cloak-ssh-agent | $(O)/
	cp $< $@ && chmod 755 $@
$(O)/cloak-ssh-keygen: tools/cloak-ssh-keygen.c $(O)/host/examples/ssh-agent/agent_wire.o \
		examples/ssh-agent/agent_wire.h | $(O)/
	$(CC) $(HOST_CFLAGS) -o $@ $< $(O)/host/examples/ssh-agent/agent_wire.o -lcrypto
ALL_TARGETS += $(O)/cloak-ssh-agent $(O)/cloak-ssh-keygen

# The guest they drive is installed by examples/build.mk.
.PHONY: install-ssh-agent-tools
install: install-ssh-agent-tools
install-ssh-agent-tools: $(O)/cloak-ssh-keygen
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 tools/cloak-ssh-agent $(DESTDIR)$(PREFIX)/bin/cloak-ssh-agent
	install -m 755 $(O)/cloak-ssh-keygen $(DESTDIR)$(PREFIX)/bin/cloak-ssh-keygen
include tools/pkcs11/build.mk

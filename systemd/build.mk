# SPDX-License-Identifier: ISC
# systemd units and session glue for the key services (docs/packaging.md):
#   user/     the SSH agent and the user's own PKCS#11 token, each a socket
#             that starts its guest on the first connection
#   system/   cloak-pkcs11@NAME: a server's token, one per instance
#   cloak-pkcs11.sysusers   the system token's user and its clients' group
#   60-cloak-kvm.rules      /dev/kvm as dev-kvm.device, which the system
#             token waits for at boot
#   ssh-agent-env-generator, ssh-agent-profile.sh   SSH_AUTH_SOCK for the
#             sessions of a user who enabled cloak-ssh-agent.socket
# Units name the installed monitor and guests: @BINDIR@ and @PKGLIBDIR@
# are filled in at install time. With PREFIX=/usr the directories are
# systemd's own (Debian's packaging uses them as they are); under another
# prefix systemd finds units only in /usr/local (or when pointed at them).
SYSTEMD_SYSTEM_UNIT_DIR ?= $(PREFIX)/lib/systemd/system
SYSTEMD_USER_UNIT_DIR ?= $(PREFIX)/lib/systemd/user
SYSTEMD_USER_ENV_GENERATOR_DIR ?= $(PREFIX)/lib/systemd/user-environment-generators
SYSUSERS_DIR ?= $(PREFIX)/lib/sysusers.d
UDEV_RULES_DIR ?= $(PREFIX)/lib/udev/rules.d
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)

SYSTEMD_UNITS_USER := $(wildcard systemd/user/*.in)
SYSTEMD_UNITS_SYSTEM := $(wildcard systemd/system/*.in)

.PHONY: install-systemd
install: install-systemd
install-systemd:
	install -d $(DESTDIR)$(SYSTEMD_USER_UNIT_DIR) $(DESTDIR)$(SYSTEMD_SYSTEM_UNIT_DIR) \
		$(DESTDIR)$(SYSTEMD_USER_ENV_GENERATOR_DIR) $(DESTDIR)$(SYSUSERS_DIR) \
		$(DESTDIR)$(SYSCONFDIR)/profile.d $(DESTDIR)$(UDEV_RULES_DIR)
	for u in $(SYSTEMD_UNITS_USER:%=% $(SYSTEMD_USER_UNIT_DIR)) \
		 $(SYSTEMD_UNITS_SYSTEM:%=% $(SYSTEMD_SYSTEM_UNIT_DIR)); do \
		case $$u in *.in) src=$$u; continue ;; esac; \
		sed -e 's|@BINDIR@|$(PREFIX)/bin|g' -e 's|@PKGLIBDIR@|$(PREFIX)/lib/cloak|g' $$src \
			> $(DESTDIR)$$u/$$(basename $$src .in) || exit 1; \
		chmod 644 $(DESTDIR)$$u/$$(basename $$src .in); \
	done
	install -m 755 systemd/ssh-agent-env-generator \
		$(DESTDIR)$(SYSTEMD_USER_ENV_GENERATOR_DIR)/90cloak-ssh-agent
	install -m 644 systemd/ssh-agent-profile.sh $(DESTDIR)$(SYSCONFDIR)/profile.d/cloak-ssh-agent.sh
	install -m 644 systemd/cloak-pkcs11.sysusers $(DESTDIR)$(SYSUSERS_DIR)/cloak-pkcs11.conf
	install -m 644 systemd/60-cloak-kvm.rules $(DESTDIR)$(UDEV_RULES_DIR)/60-cloak-kvm.rules

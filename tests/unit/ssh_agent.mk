# SPDX-License-Identifier: ISC
# The ssh-agent guest's host-buildable modules (services/ssh-agent/guest;
# objects from services/ssh-agent/build.mk), against the host's BearSSL and
# libsodium.
$(eval $(call unit_test,test_ssh_agent,$(SSH_AGENT_HOST_OBJ),-l:libbearssl.a -lsodium $(NETTLE_LIBS)))
$(O)/tests/test_ssh_agent: HOST_CFLAGS += $(SERVICES_CFLAGS) $(SSH_AGENT_CFLAGS)
$(O)/san/tests/test_ssh_agent: SAN_CFLAGS += $(SERVICES_CFLAGS) $(SSH_AGENT_CFLAGS)
$(O)/tests/test_ssh_agent $(O)/san/tests/test_ssh_agent: $(wildcard services/ssh-agent/guest/*.h services/common/*.h) tests/unit/agent_vectors.h

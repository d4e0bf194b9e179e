# SPDX-License-Identifier: ISC
# The ssh-agent guest's host-buildable modules (examples/ssh-agent; objects
# from examples/build.mk), against the host's BearSSL and libsodium.
$(eval $(call unit_test,test_ssh_agent,$(SSH_AGENT_HOST_OBJ),-l:libbearssl.a -lsodium $(NETTLE_LIBS)))
$(O)/tests/test_ssh_agent $(O)/san/tests/test_ssh_agent: $(wildcard examples/ssh-agent/*.h)

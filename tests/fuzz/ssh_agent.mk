# SPDX-License-Identifier: ISC
# The ssh-agent guest's parser and request handler (fuzz_ssh_agent.c), built
# from the same sources as the guest, against the host's BearSSL and libsodium.
FUZZ_TARGETS += ssh_agent
SSH_AGENT_FUZZ_OBJ = $(SSH_AGENT_HOST_SRC:%.c=$(O)/fuzz/obj/%.o) $(O)/fuzz/obj/services/common/ecdsa.o \
	$(O)/fuzz/obj/services/common/wire.o
$(O)/fuzz/fuzz_ssh_agent: tests/fuzz/fuzz_ssh_agent.c $(SSH_AGENT_FUZZ_OBJ) $(wildcard services/ssh-agent/guest/*.h)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(SERVICES_CFLAGS) $(SSH_AGENT_CFLAGS) -fsanitize=fuzzer -o $@ $< $(SSH_AGENT_FUZZ_OBJ) -l:libbearssl.a -lsodium $(NETTLE_LIBS)
$(O)/fuzz/seeds/ssh_agent.stamp: tests/fuzz/ssh_agent_seeds.py
	rm -rf $(O)/fuzz/seeds/ssh_agent
	tests/fuzz/ssh_agent_seeds.py $(O)/fuzz/seeds/ssh_agent
	touch $@
FUZZ_ARGS_ssh_agent := -max_len=8192

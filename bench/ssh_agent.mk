# SPDX-License-Identifier: ISC
# ssh-agent benchmark (docs/ssh-agent.md): the guest against OpenSSH's agent.
SSH_AGENT_BENCH_DEPS := $(O)/cloak $(O)/services/ssh-agent.elf
bench/ssh-agent-bench: $(SSH_AGENT_BENCH_DEPS)
BENCHES += bench/ssh-agent-bench

# SPDX-License-Identifier: ISC
# Benchmarks (`make bench`): each entry of BENCHES prints its own table.
$(O)/bench/bench_boot: bench/bench_boot.c
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -o $@ $<
$(O)/bench/bench_guestmem: bench/bench_guestmem.c $(O)/monitor/libmonitor.a
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -Imonitor -o $@ $< $(O)/monitor/libmonitor.a $(MONITOR_LIBS)
BENCH_GUESTS := $(patsubst bench/guests/%.c,$(O)/bench/guests/%.elf,$(wildcard bench/guests/*.c))
$(foreach g,$(BENCH_GUESTS),$(eval $(call guest_elf,$(g),$(patsubst $(O)/bench/guests/%.elf,$(O)/guest/bench/guests/%.o,$(g)))))

# The device process's wake-up: futex, eventfd and the monitor's own wake
# rules (monitor/handoff/handoff.c).
$(O)/bench/bench_handoff: bench/bench_handoff.c $(O)/monitor/libmonitor.a
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -Imonitor -o $@ $< $(O)/monitor/libmonitor.a $(MONITOR_LIBS)
CORE_BENCH_DEPS := $(O)/bench/bench_boot $(O)/bench/bench_guestmem $(BENCH_GUESTS) \
	$(O)/bench/bench_handoff \
	$(O)/bench/compute_ref \
	$(O)/cloak $(O)/examples/hello.elf
ALL_TARGETS += $(CORE_BENCH_DEPS)
BENCHES += bench/run-core-bench

# Guest compute against the same code on the host (bench/compute_work.h);
# run by the SVM tier's benchmarks (make bench-svm).
$(O)/bench/compute_ref: bench/compute_ref.c bench/compute_work.h
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -o $@ $<
ALL_TARGETS += $(O)/bench/compute_ref

# cloak beside Solo5 hvt on equal work, when SOLO5_DIR points at a Solo5
# build (docs/performance.md); without it, cloak's figures and a plain
# note that the peer's are absent. Also part of `make bench`.
.PHONY: bench-peers
bench-peers: all
	bench/peers-bench
BENCHES += bench/peers-bench

# Benchmark fragments of their own.
# libcloak against libsodium and OpenSSL's secure heap, TLS handshakes, and
# short-lived openssl commands.
$(O)/bench/libcloak_bench: bench/libcloak_bench.c $(O)/libcloak/libcloak.a
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -Ilibcloak -o $@ $< $(O)/libcloak/libcloak.a -lsodium -lcrypto -pthread
# The start-up figure's two programs: with libcloak.so, and without.
$(O)/bench/libcloak_start_cloak: bench/libcloak_start.c $(O)/libcloak/libcloak.so
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -DWITH_LIBCLOAK -o $@ $< -L$(O)/libcloak -l:libcloak.so \
		-Wl,-rpath,$(abspath $(O)/libcloak)
$(O)/bench/libcloak_start_plain: bench/libcloak_start.c
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -o $@ $<
ALL_TARGETS += $(O)/bench/libcloak_bench $(O)/bench/libcloak_start_cloak $(O)/bench/libcloak_start_plain
BENCHES += $(O)/bench/libcloak_bench bench/libcloak-tls-bench bench/libcloak-cli-bench

# The key services' ECDSA against the BearSSL code it replaced.
$(O)/bench/bench_ecdsa: bench/bench_ecdsa.c $(ECDSA_HOST_OBJ) services/common/ecdsa.h
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) $(SERVICES_CFLAGS) -o $@ $< $(ECDSA_HOST_OBJ) -l:libbearssl.a $(NETTLE_LIBS)
ALL_TARGETS += $(O)/bench/bench_ecdsa
BENCHES += $(O)/bench/bench_ecdsa

include bench/io.mk bench/ssh_agent.mk bench/pkcs11.mk

# The benchmarks that boot guests: bench/run-benches leaves them out where
# the host has no /dev/kvm, and says that make bench-svm runs them.
KVM_BENCHES := bench/run-core-bench bench/peers-bench bench/io-bench bench/split-bench bench/ssh-agent-bench bench/pkcs11-bench
bench: export CLOAK_KVM_BENCHES = $(KVM_BENCHES)

# SPDX-License-Identifier: ISC
# Benchmarks (`make bench`): each entry of BENCHES prints its own table.
$(O)/bench/bench_boot: bench/bench_boot.c
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -o $@ $<
$(O)/bench/bench_guestmem: bench/bench_guestmem.c $(O)/monitor/libmonitor.a
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -Imonitor -o $@ $< $(O)/monitor/libmonitor.a $(MONITOR_LIBS)
$(eval $(call guest_elf,$(O)/bench/guests/hcbench.elf,$(O)/guest/bench/guests/hcbench.o))

CORE_BENCH_DEPS := $(O)/bench/bench_boot $(O)/bench/bench_guestmem $(O)/bench/guests/hcbench.elf \
	$(O)/bench/compute_ref $(O)/bench/guests/compute.elf \
	$(O)/cloak $(O)/examples/hello.elf
ALL_TARGETS += $(CORE_BENCH_DEPS)
BENCHES += bench/run-core-bench

# Guest compute against the same code on the host (bench/compute_work.h);
# run by the SVM tier's benchmarks (make bench-svm).
$(O)/bench/compute_ref: bench/compute_ref.c bench/compute_work.h
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -o $@ $<
$(eval $(call guest_elf,$(O)/bench/guests/compute.elf,$(O)/guest/bench/guests/compute.o))
ALL_TARGETS += $(O)/bench/compute_ref $(O)/bench/guests/compute.elf

# Benchmark fragments of their own.
-include bench/ssh_agent.mk

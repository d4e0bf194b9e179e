# SPDX-License-Identifier: ISC
# Guest I/O benchmarks (issue 4): block, channel, keyvault.
ifndef CLOAK_IO_BENCH_MK
CLOAK_IO_BENCH_MK := 1
IO_BENCH_DEPS := $(O)/cloak $(O)/cloak-keyvault $(O)/examples/keyvault.elf \
	$(O)/tests/guests/block_bench.elf $(O)/tests/guests/block_bench_direct.elf \
	$(O)/tests/guests/chan_echo.elf
bench/io-bench: $(IO_BENCH_DEPS)
BENCHES += bench/io-bench
endif

# SPDX-License-Identifier: ISC
# Guest I/O benchmarks: block, channel.
IO_BENCH_DEPS := $(O)/cloak $(O)/bench/guests/block_bench.elf $(O)/bench/guests/block_bench_direct.elf \
	$(O)/tests/guests/chan_echo.elf
bench/io-bench: $(IO_BENCH_DEPS)
BENCHES += bench/io-bench
# The device process against one process, from the same build.
bench/split-bench: $(O)/cloak $(O)/bench/guests/hcbench.elf $(O)/bench/guests/block_bench.elf \
	$(O)/tests/guests/chan_echo.elf
BENCHES += bench/split-bench

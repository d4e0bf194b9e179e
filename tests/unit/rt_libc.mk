# SPDX-License-Identifier: ISC
# Host builds of the guest runtime's libc and their unit tests.
#
# runtime/libc/*.c define malloc, memcpy, snprintf, ... so their host
# objects are compiled with `-include tests/unit/rt_rename.h`, which renames
# every libc name to rt_NAME, and -ffreestanding (as for the guest: no
# builtins, gcc's own stdint.h). The tests link those objects next to glibc
# and compare the two. These rules do not use unit_test (that links
# libmonitor.a, which the runtime does not need).

RT_LIBC_SRC := $(wildcard runtime/libc/*.c)
RT_LIBC_HOST_CFLAGS := -ffreestanding -fno-builtin -Iruntime/include -include tests/unit/rt_rename.h
RT_LIBC_HOST_OBJ := $(RT_LIBC_SRC:runtime/libc/%.c=$(O)/rt-host/libc/%.o)
RT_LIBC_SAN_OBJ := $(RT_LIBC_SRC:runtime/libc/%.c=$(O)/san/rt-host/libc/%.o)
RT_LIBC_TESTS := test_rt_libc test_rt_heap

$(O)/rt-host/libc/%.o: runtime/libc/%.c tests/unit/rt_rename.h
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) $(RT_LIBC_HOST_CFLAGS) -MMD -MP -c -o $@ $<
$(O)/san/rt-host/libc/%.o: runtime/libc/%.c tests/unit/rt_rename.h
	@mkdir -p $(dir $@)
	$(CC) $(SAN_CFLAGS) $(RT_LIBC_HOST_CFLAGS) -MMD -MP -c -o $@ $<

# The test programs themselves see glibc under the usual names (they
# include the runtime headers through rt_libc_test.h).
$(O)/tests/test_rt_%: tests/unit/test_rt_%.c tests/unit/rt_libc_test.h tests/unit/rt_rename.h $(RT_LIBC_HOST_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -fno-builtin -o $@ $< $(RT_LIBC_HOST_OBJ) -lcmocka
$(O)/san/tests/test_rt_%: tests/unit/test_rt_%.c tests/unit/rt_libc_test.h tests/unit/rt_rename.h $(RT_LIBC_SAN_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(SAN_CFLAGS) -fno-builtin -o $@ $< $(RT_LIBC_SAN_OBJ) -lcmocka

ALL_TARGETS += $(RT_LIBC_TESTS:%=$(O)/tests/%)
TESTS += $(RT_LIBC_TESTS:%=$(O)/tests/%)
ASAN_TESTS += $(RT_LIBC_TESTS:%=$(O)/san/tests/%)
-include $(RT_LIBC_HOST_OBJ:.o=.d) $(RT_LIBC_SAN_OBJ:.o=.d)

# The runtime's block API and its cache (runtime/block.c, block_cache.c),
# built for the host with the calls answered by the test itself
# (CLOAK_RT_HOST_TEST in cloak/guest.h), over the runtime's own libc (as
# rt_libc.mk builds it).
RT_BLOCK_SRC := runtime/block.c runtime/block_cache.c
RT_BLOCK_HOST_CFLAGS := $(RT_LIBC_HOST_CFLAGS) -DCLOAK_RT_HOST_TEST -Iruntime
RT_BLOCK_HOST_OBJ := $(RT_BLOCK_SRC:runtime/%.c=$(O)/rt-host/%.o)
RT_BLOCK_SAN_OBJ := $(RT_BLOCK_SRC:runtime/%.c=$(O)/san/rt-host/%.o)

$(O)/rt-host/%.o: runtime/%.c tests/unit/rt_rename.h
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) $(RT_BLOCK_HOST_CFLAGS) -MMD -MP -c -o $@ $<
$(O)/san/rt-host/%.o: runtime/%.c tests/unit/rt_rename.h
	@mkdir -p $(dir $@)
	$(CC) $(SAN_CFLAGS) $(RT_BLOCK_HOST_CFLAGS) -MMD -MP -c -o $@ $<

$(O)/tests/test_rt_block: tests/unit/test_rt_block.c $(RT_BLOCK_HOST_OBJ) $(RT_LIBC_HOST_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -fno-builtin -DCLOAK_RT_HOST_TEST -iquote runtime/include -o $@ $< \
		$(RT_BLOCK_HOST_OBJ) \
		$(RT_LIBC_HOST_OBJ) -lcmocka
$(O)/san/tests/test_rt_block: tests/unit/test_rt_block.c $(RT_BLOCK_SAN_OBJ) $(RT_LIBC_SAN_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(SAN_CFLAGS) -fno-builtin -DCLOAK_RT_HOST_TEST -iquote runtime/include -o $@ $< \
		$(RT_BLOCK_SAN_OBJ) \
		$(RT_LIBC_SAN_OBJ) -lcmocka

ALL_TARGETS += $(O)/tests/test_rt_block
TESTS += $(O)/tests/test_rt_block
ASAN_TESTS += $(O)/san/tests/test_rt_block
-include $(RT_BLOCK_HOST_OBJ:.o=.d) $(RT_BLOCK_SAN_OBJ:.o=.d)

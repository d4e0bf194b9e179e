# SPDX-License-Identifier: ISC
COMMON_SRC := common/secretmem.c common/kcore.c
$(O)/common/%.o: common/%.c | $(O)/common/
	$(CC) $(HOST_CFLAGS) -fPIC -MMD -MP -c -o $@ $<
$(O)/san/common/%.o: common/%.c | $(O)/san/common/
	$(CC) $(SAN_CFLAGS) -MMD -MP -c -o $@ $<
COMMON_OBJ := $(COMMON_SRC:%.c=$(O)/%.o)
COMMON_SAN_OBJ := $(COMMON_SRC:%.c=$(O)/san/%.o)
-include $(COMMON_OBJ:.o=.d) $(COMMON_SAN_OBJ:.o=.d)

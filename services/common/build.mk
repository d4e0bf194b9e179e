# SPDX-License-Identifier: ISC
# What the two key services (services/ssh-agent, services/pkcs11) share
# (services/common): the wire codec, the wipe helpers, the entropy mix, the
# shims Debian's prebuilt libraries need, the timeout options, and ECDSA
# (ecdsa.c, on Debian's Nettle and GMP, static in the guests). The guests
# link all of it; the host builds the codec and ECDSA for its tests and
# tools.
SERVICES_CFLAGS := -Iservices/common
$(O)/guest/services/%.o: GUEST_CFLAGS += $(SERVICES_CFLAGS)
SERVICES_COMMON_OBJ := $(patsubst %.c,$(O)/guest/%.o,$(wildcard services/common/*.c))
NETTLE_STATIC := $(addprefix /usr/lib/x86_64-linux-gnu/,libhogweed.a libnettle.a libgmp.a)
NETTLE_LIBS := -l:libhogweed.a -l:libnettle.a -l:libgmp.a
ECDSA_HOST_OBJ := $(O)/host/services/common/ecdsa.o
WIRE_HOST_OBJ := $(O)/host/services/common/wire.o

# Host builds of the services' modules (each service's build.mk names
# its own), for the unit tests, the fuzz targets, the host tools and the
# PKCS#11 module (hence -fPIC); plus sanitizer twins.
$(O)/host/services/%.o: services/%.c
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) $(SERVICES_CFLAGS) -fPIC -MMD -MP -c -o $@ $<
$(O)/san/host/services/%.o: services/%.c
	@mkdir -p $(dir $@)
	$(CC) $(SAN_CFLAGS) $(SERVICES_CFLAGS) -MMD -MP -c -o $@ $<
-include $(shell find $(O)/host/services $(O)/san/host/services -name '*.d' 2>/dev/null)

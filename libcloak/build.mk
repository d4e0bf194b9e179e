# SPDX-License-Identifier: ISC
# libcloak: libcloak.so / libcloak.a, the front ends libcloak-sodium.so and
# libcloak-openssl.so, cloak.pc, man pages, `make install` (PREFIX, DESTDIR)
# and the benchmark. Objects are built with hidden visibility; the version
# scripts list what each library exports.
LIBCLOAK_SRC := libcloak/core.c libcloak/backend.c libcloak/pool.c libcloak/mapped.c \
        libcloak/stats.c libcloak/idle.c libcloak/lifecycle.c libcloak/api.c libcloak/env.c
LIBCLOAK_OBJ := $(LIBCLOAK_SRC:%.c=$(O)/%.o)
LIBCLOAK_SAN_OBJ := $(LIBCLOAK_SRC:%.c=$(O)/san/%.o)
LIBCLOAK_CFLAGS := -fPIC -fvisibility=hidden -Ilibcloak
LIBCLOAK_LIBS := -pthread
LIBCLOAK_SO_VERSION := 0

$(O)/libcloak/%.o: libcloak/%.c | $(O)/libcloak/
	$(CC) $(HOST_CFLAGS) $(LIBCLOAK_CFLAGS) -MMD -MP -c -o $@ $<
$(O)/san/libcloak/%.o: libcloak/%.c | $(O)/san/libcloak/
	$(CC) $(SAN_CFLAGS) $(LIBCLOAK_CFLAGS) -MMD -MP -c -o $@ $<

$(O)/libcloak/libcloak.a: $(LIBCLOAK_OBJ) $(COMMON_OBJ)
	rm -f $@ && ar rcs $@ $^
$(O)/san/libcloak/libcloak.a: $(LIBCLOAK_SAN_OBJ) $(COMMON_SAN_OBJ)
	rm -f $@ && ar rcs $@ $^

# $(call cloak_shared,OUTPUT,EXTRA_OBJS,VERSION_SCRIPT,LIBS): OUTPUT plus the
# OUTPUT.0 link its soname asks for, so programs linked in the tree run.
# -z nodelete: dlclose never unmaps the code the idle-release thread runs.
define cloak_shared
$(1): $(LIBCLOAK_OBJ) $(COMMON_OBJ) $(2) $(3)
	$$(CC) $$(HOST_LDFLAGS) -shared -Wl,-soname,$$(notdir $(1)).$(LIBCLOAK_SO_VERSION) \
		-Wl,--version-script=$(3) -Wl,-z,defs -Wl,-z,nodelete -o $$@ $(2) $(LIBCLOAK_OBJ) $(COMMON_OBJ) \
		$(LIBCLOAK_LIBS) $(4)
	ln -sf $$(notdir $(1)) $(1).$(LIBCLOAK_SO_VERSION)
endef
$(eval $(call cloak_shared,$(O)/libcloak/libcloak.so,,libcloak/libcloak.map,))
$(eval $(call cloak_shared,$(O)/libcloak/libcloak-sodium.so,$(O)/libcloak/sodium.o,libcloak/sodium.map,))
$(eval $(call cloak_shared,$(O)/libcloak/libcloak-openssl.so,$(O)/libcloak/openssl.o,libcloak/openssl.map,-ldl))

# ThreadSanitizer build of the library, for `make check-tsan`.
LIBCLOAK_TSAN_CFLAGS := $(filter-out -D_FORTIFY_SOURCE=2,$(HOST_CFLAGS)) -O1 -fsanitize=thread \
        -fno-omit-frame-pointer
$(O)/tsan/libcloak/%.o: libcloak/%.c
	@mkdir -p $(dir $@)
	$(CC) $(LIBCLOAK_TSAN_CFLAGS) $(LIBCLOAK_CFLAGS) -MMD -MP -c -o $@ $<
$(O)/tsan/common/%.o: common/%.c
	@mkdir -p $(dir $@)
	$(CC) $(LIBCLOAK_TSAN_CFLAGS) -MMD -MP -c -o $@ $<
$(O)/tsan/libcloak/libcloak.a: $(LIBCLOAK_SRC:%.c=$(O)/tsan/%.o) $(COMMON_SRC:%.c=$(O)/tsan/%.o)
	rm -f $@ && ar rcs $@ $^

# The sanitizer twin of the sodium front end, for the ASan unit tests.
$(O)/san/libcloak/libcloak-sodium.a: $(LIBCLOAK_SAN_OBJ) $(COMMON_SAN_OBJ) $(O)/san/libcloak/sodium.o
	rm -f $@ && ar rcs $@ $^

LIBCLOAK_LIBS_OUT := $(O)/libcloak/libcloak.so $(O)/libcloak/libcloak.a \
        $(O)/libcloak/libcloak-sodium.so $(O)/libcloak/libcloak-openssl.so
ALL_TARGETS += $(LIBCLOAK_LIBS_OUT)

# ---- install ----
LIBCLOAK_LIBDIR = $(DESTDIR)$(LIBDIR)
LIBCLOAK_MAN3 := $(sort $(wildcard man/libcloak*.3 man/cloak_secret*.3 man/*sodium*.3))

.PHONY: install-libcloak
install: install-libcloak
install-libcloak: $(LIBCLOAK_LIBS_OUT)
	install -d $(LIBCLOAK_LIBDIR)/pkgconfig $(DESTDIR)$(PREFIX)/include/cloak \
		$(DESTDIR)$(PREFIX)/share/man/man3
	for lib in libcloak libcloak-sodium libcloak-openssl; do \
		install -m 755 $(O)/libcloak/$$lib.so $(LIBCLOAK_LIBDIR)/$$lib.so.$(LIBCLOAK_SO_VERSION) && \
		ln -sf $$lib.so.$(LIBCLOAK_SO_VERSION) $(LIBCLOAK_LIBDIR)/$$lib.so || exit 1; \
	done
	install -m 644 $(O)/libcloak/libcloak.a $(LIBCLOAK_LIBDIR)/libcloak.a
	install -m 644 include/cloak/secret.h $(DESTDIR)$(PREFIX)/include/cloak/secret.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(LIBDIR))|' \
		-e 's|@VERSION@|$(VERSION)|' libcloak/cloak.pc.in \
		> $(LIBCLOAK_LIBDIR)/pkgconfig/cloak.pc
	$(if $(LIBCLOAK_MAN3),install -m 644 $(LIBCLOAK_MAN3) $(DESTDIR)$(PREFIX)/share/man/man3)


-include $(LIBCLOAK_OBJ:.o=.d) $(LIBCLOAK_SAN_OBJ:.o=.d) $(O)/libcloak/sodium.d \
        $(LIBCLOAK_SRC:%.c=$(O)/tsan/%.d) \
        $(O)/libcloak/openssl.d $(O)/san/libcloak/sodium.d

# The monitor: every monitor/*.c but main.c goes into libmonitor.a, so unit
# tests and fuzz targets link the same code the binary runs.
MONITOR_SRC := $(filter-out monitor/main.c,$(wildcard monitor/*.c))
MONITOR_OBJ := $(MONITOR_SRC:%.c=$(O)/%.o)
MONITOR_SAN_OBJ := $(MONITOR_SRC:%.c=$(O)/san/%.o)
MONITOR_LIBS := -lseccomp

$(O)/monitor/%.o: monitor/%.c | $(O)/monitor/
	$(CC) $(HOST_CFLAGS) -Imonitor -MMD -c -o $@ $<
$(O)/san/monitor/%.o: monitor/%.c | $(O)/san/monitor/
	$(CC) $(SAN_CFLAGS) -Imonitor -MMD -c -o $@ $<

$(O)/monitor/libmonitor.a: $(MONITOR_OBJ) $(COMMON_OBJ)
	rm -f $@ && ar rcs $@ $^
$(O)/san/monitor/libmonitor.a: $(MONITOR_SAN_OBJ) $(COMMON_SAN_OBJ)
	rm -f $@ && ar rcs $@ $^

$(O)/cloak: $(O)/monitor/main.o $(O)/monitor/libmonitor.a
	$(CC) $(HOST_LDFLAGS) -o $@ $^ $(MONITOR_LIBS)
$(O)/san/cloak: $(O)/san/monitor/main.o $(O)/san/monitor/libmonitor.a
	$(CC) $(SAN_FLAGS) -o $@ $^ $(MONITOR_LIBS)

ALL_TARGETS += $(O)/cloak
-include $(MONITOR_OBJ:.o=.d) $(MONITOR_SAN_OBJ:.o=.d) $(O)/monitor/main.d

# make install: the monitor, its man page, the ABI header and the guest
# runtime (library + link script + headers) for building guests elsewhere.
PREFIX ?= /usr/local
.PHONY: install-monitor
install: install-monitor
install-monitor: $(O)/cloak $(O)/runtime/libcloakrt.a
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/include/cloak $(DESTDIR)$(PREFIX)/lib/cloak/include/cloak
	install -m 755 $(O)/cloak $(DESTDIR)$(PREFIX)/bin/cloak
	install -m 644 man/cloak.1 $(DESTDIR)$(PREFIX)/share/man/man1/cloak.1
	install -m 644 include/cloak/abi.h $(DESTDIR)$(PREFIX)/include/cloak/abi.h
	install -m 644 $(O)/runtime/libcloakrt.a $(O)/guest/runtime/start.o runtime/guest.ld runtime/idt.ld \
		$(DESTDIR)$(PREFIX)/lib/cloak/
	install -m 644 runtime/include/*.h $(DESTDIR)$(PREFIX)/lib/cloak/include/
	install -m 644 runtime/include/cloak/*.h $(DESTDIR)$(PREFIX)/lib/cloak/include/cloak/

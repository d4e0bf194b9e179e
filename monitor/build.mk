# SPDX-License-Identifier: ISC
# The monitor: every monitor/**/*.c but main.c goes into libmonitor.a, so
# unit tests and fuzz targets link the same code the binary runs. Sources
# include each other by folder ("mem/guestmem.h") from -Imonitor.
# The sandbox's libseccomp rules and the program that compiles them are
# build-time only (process/sandbox_gen.c).
MONITOR_BUILD_ONLY := monitor/process/sandbox_rules.c monitor/process/sandbox_gen.c
MONITOR_SRC := $(filter-out monitor/main.c monitor/test_hooks.c $(MONITOR_BUILD_ONLY),$(wildcard monitor/*.c monitor/*/*.c))
MONITOR_OBJ := $(MONITOR_SRC:%.c=$(O)/%.o)
MONITOR_SAN_OBJ := $(MONITOR_SRC:%.c=$(O)/san/%.o)
MONITOR_LIBS := -pthread
MONITOR_CFLAGS := -Imonitor -I$(O)/monitor

# The seccomp filters as BPF, compiled once at build time by libseccomp
# (process/sandbox_gen.c), included by process/sandbox.c.
$(O)/monitor/sandbox_gen: $(MONITOR_BUILD_ONLY) monitor/process/sandbox_rules.h
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -Imonitor -o $@ $(MONITOR_BUILD_ONLY) -lseccomp
$(O)/monitor/sandbox_bpf.h: $(O)/monitor/sandbox_gen
	$< >$@.tmp && mv $@.tmp $@
$(O)/monitor/process/sandbox.o $(O)/san/monitor/process/sandbox.o: $(O)/monitor/sandbox_bpf.h

$(O)/monitor/%.o: monitor/%.c
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) $(MONITOR_CFLAGS) -MMD -MP -c -o $@ $<
$(O)/san/monitor/%.o: monitor/%.c
	@mkdir -p $(dir $@)
	$(CC) $(SAN_CFLAGS) $(MONITOR_CFLAGS) -MMD -MP -c -o $@ $<

$(O)/monitor/libmonitor.a: $(MONITOR_OBJ) $(COMMON_OBJ)
	rm -f $@ && ar rcs $@ $^
$(O)/san/monitor/libmonitor.a: $(MONITOR_SAN_OBJ) $(COMMON_SAN_OBJ)
	rm -f $@ && ar rcs $@ $^

# The monitor is linked static-pie: no dynamic loader, no symbol lookups and
# no relocations of shared libraries at each start (measured: ~0.2 ms of an
# empty guest's boot on hosts whose KVM emulates guest code), and ~0.8 MiB
# less resident memory; addresses are still randomised. valgrind checks
# malloc and free only in a dynamic binary, so the valgrind suite runs the
# same objects linked dynamically ($(O)/tests/cloak-dynamic); the sanitizer
# build stays dynamic too.
$(O)/cloak: $(O)/monitor/main.o $(O)/monitor/libmonitor.a
	$(CC) $(HOST_LDFLAGS) -static-pie -o $@ $^ $(MONITOR_LIBS)
$(O)/tests/cloak-dynamic: $(O)/monitor/main.o $(O)/monitor/libmonitor.a
	@mkdir -p $(dir $@)
	$(CC) $(HOST_LDFLAGS) -o $@ $^ $(MONITOR_LIBS)
$(O)/san/cloak: $(O)/san/monitor/main.o $(O)/san/monitor/libmonitor.a
	$(CC) $(SAN_FLAGS) -o $@ $^ $(MONITOR_LIBS)

# The test build (test_hooks.h): the hook callers compiled again with
# CLOAK_TEST_HOOKS, linked ahead of the same libmonitor.a.
# Every file that calls a hook (tests/unit/structure.bats checks the list).
MONITOR_HOOKS_SRC := monitor/main.c monitor/test_hooks.c monitor/runner/run.c \
	monitor/device/call_poll.c monitor/device/call_channel.c monitor/device/serve.c monitor/mem/backend.c \
	monitor/mem/device_view.c monitor/mem/give_up.c monitor/setup/setup.c
MONITOR_HOOKS_OBJ := $(MONITOR_HOOKS_SRC:monitor/%.c=$(O)/tests/hooks/%.o)
$(O)/tests/hooks/%.o: monitor/%.c
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) $(MONITOR_CFLAGS) -DCLOAK_TEST_HOOKS -MMD -MP -c -o $@ $<
# Linked as the shipped monitor is (static-pie), so its phase timings
# (CLOAK_TEST_PHASES) are the shipped monitor's.
$(O)/tests/cloak-hooks: $(MONITOR_HOOKS_OBJ) $(O)/monitor/libmonitor.a
	$(CC) $(HOST_LDFLAGS) -static-pie -o $@ $^ $(MONITOR_LIBS)

ALL_TARGETS += $(O)/cloak $(O)/tests/cloak-hooks $(O)/tests/cloak-dynamic
-include $(MONITOR_HOOKS_OBJ:.o=.d)
-include $(MONITOR_OBJ:.o=.d) $(MONITOR_SAN_OBJ:.o=.d) $(O)/monitor/main.d $(O)/san/monitor/main.d

# make install: the monitor and its man page.
.PHONY: install-monitor
install: install-monitor
install-monitor: $(O)/cloak
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 $(O)/cloak $(DESTDIR)$(PREFIX)/bin/cloak
	install -m 644 man/cloak.1 $(DESTDIR)$(PREFIX)/share/man/man1/cloak.1

# SPDX-License-Identifier: ISC
# libcloak's tests: cmocka programs (each with an ASan+UBSan twin), a plain
# TAP program for the protection checks that may need to SKIP, and bats
# suites for the installed libraries, the sodium preload and the openssl CLI.
LIBCLOAK_TEST_HELPERS := tests/libcloak/child.c
cloak_comma := ,

# $(call cloak_test,NAME,LINK_DEPS,LINK_ARGS,SAN_LINK_DEPS,SAN_LINK_ARGS)
define cloak_test
$(O)/tests/libcloak/$(1): tests/libcloak/$(1).c $(LIBCLOAK_TEST_HELPERS) $(2) tests/libcloak/child.h
	@mkdir -p $$(dir $$@)
	$$(CC) $$(HOST_CFLAGS) -Ilibcloak -Itests/libcloak -o $$@ $$< $(LIBCLOAK_TEST_HELPERS) $(3) -lcmocka -pthread
$(O)/san/tests/libcloak/$(1): tests/libcloak/$(1).c $(LIBCLOAK_TEST_HELPERS) $(4) tests/libcloak/child.h
	@mkdir -p $$(dir $$@)
	$$(CC) $$(SAN_CFLAGS) -Ilibcloak -Itests/libcloak -o $$@ $$< $(LIBCLOAK_TEST_HELPERS) $(5) -lcmocka -pthread
ALL_TARGETS += $(O)/tests/libcloak/$(1)
TESTS += $(O)/tests/libcloak/$(1)
endef

LIBCLOAK_A := $(O)/libcloak/libcloak.a
LIBCLOAK_SAN_A := $(O)/san/libcloak/libcloak.a
# Every test also runs under ASan+UBSan: memfd_secret memory is ordinary
# memory to the sanitizers (libcloak calls mlock through syscall() because
# ASan's mlock interceptor does nothing), fault tests install their own
# SIGSEGV handler, and the core-dump test re-enables cores that ASan turns off.
LIBCLOAK_UNIT_TESTS := test_alloc test_detect test_fork test_limits test_threads
$(foreach t,$(LIBCLOAK_UNIT_TESTS),$(eval $(call cloak_test,$(t),$(LIBCLOAK_A),$(LIBCLOAK_A),$(LIBCLOAK_SAN_A),$(LIBCLOAK_SAN_A))))
ASAN_TESTS += $(patsubst %,$(O)/san/tests/libcloak/%,$(LIBCLOAK_UNIT_TESTS))

# The sodium front end: the plain build links the shared library itself.
$(eval $(call cloak_test,test_sodium,$(O)/libcloak/libcloak-sodium.so,-L$(O)/libcloak -l:libcloak-sodium.so -Wl$(cloak_comma)-rpath$(cloak_comma)$(abspath $(O)/libcloak) $(COMMON_OBJ),$(O)/san/libcloak/libcloak-sodium.a,$(O)/san/libcloak/libcloak-sodium.a))
ASAN_TESTS += $(O)/san/tests/libcloak/test_sodium

# Plain TAP (it may SKIP): same build, without cmocka.
$(eval $(call cloak_test,test_protect,$(LIBCLOAK_A),$(LIBCLOAK_A),$(LIBCLOAK_SAN_A),$(LIBCLOAK_SAN_A)))
ASAN_TESTS += $(O)/san/tests/libcloak/test_protect

$(O)/tests/libcloak/keyscan: tests/libcloak/keyscan.c
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -o $@ $<
ALL_TARGETS += $(O)/tests/libcloak/keyscan

# Programs written for OpenSSL, run under the preload by openssl.bats.
$(O)/tests/libcloak/secure_heap_user: tests/libcloak/secure_heap_user.c
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -o $@ $< -lcrypto
$(O)/tests/libcloak/dlmopen_user: tests/libcloak/dlmopen_user.c
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -o $@ $< -ldl
$(O)/tests/libcloak/static_openssl_user: tests/libcloak/static_openssl_user.c
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -o $@ $< -Wl,-Bstatic -lcrypto -Wl,-Bdynamic -ldl -pthread
ALL_TARGETS += $(O)/tests/libcloak/secure_heap_user $(O)/tests/libcloak/dlmopen_user \
        $(O)/tests/libcloak/static_openssl_user

# Runs processes out of secret memory (exhaust.bats).
$(O)/tests/libcloak/exhaust_user: tests/libcloak/exhaust_user.c $(LIBCLOAK_A)
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -o $@ $< $(LIBCLOAK_A) -pthread
ALL_TARGETS += $(O)/tests/libcloak/exhaust_user

$(O)/tests/libcloak/sodium_user: tests/libcloak/sodium_user.c
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -o $@ $< -lsodium
ALL_TARGETS += $(O)/tests/libcloak/sodium_user

# ThreadSanitizer: the tests that run threads (and fork among them), linked
# against the TSan build of libcloak. Run by `make check-tsan`.
LIBCLOAK_TSAN_TESTS := test_threads test_fork
$(O)/tsan/tests/libcloak/%: tests/libcloak/%.c $(LIBCLOAK_TEST_HELPERS) tests/libcloak/child.h \
		$(O)/tsan/libcloak/libcloak.a
	@mkdir -p $(dir $@)
	$(CC) $(LIBCLOAK_TSAN_CFLAGS) -Ilibcloak -Itests/libcloak -o $@ $< $(LIBCLOAK_TEST_HELPERS) \
		$(O)/tsan/libcloak/libcloak.a -lcmocka -pthread
.PHONY: check-tsan
check-tsan: $(O)/.deps-ok $(LIBCLOAK_TSAN_TESTS:%=$(O)/tsan/tests/libcloak/%)
	TSAN_OPTIONS=halt_on_error=1:exitcode=66:second_deadlock_stack=1 \
		tests/harness/run-tests $(LIBCLOAK_TSAN_TESTS:%=$(O)/tsan/tests/libcloak/%)

# The bats suites find the build through these.
export CLOAK_BUILD_DIR := $(abspath $(O))
export CLOAK_BUILD_O := $(O)
TESTS += tests/libcloak/libcloak.bats tests/libcloak/openssl.bats tests/libcloak/headers.bats \
	tests/libcloak/nginx.bats tests/libcloak/env.bats tests/libcloak/sshd.bats \
	tests/libcloak/exhaust.bats

# A program that sandboxes itself with seccomp before it exits (env.bats:
# CLOAK_STATS must print with write alone).
$(O)/tests/libcloak/sandboxed_exit: tests/libcloak/sandboxed_exit.c
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -o $@ $< -lseccomp -ldl
ALL_TARGETS += $(O)/tests/libcloak/sandboxed_exit

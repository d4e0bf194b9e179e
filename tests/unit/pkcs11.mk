# SPDX-License-Identifier: ISC
# The PKCS#11 token guest's host-buildable modules (test_pkcs11.c).
$(eval $(call unit_test,test_pkcs11,$(P11_HOST_OBJ),$(P11_HOST_LIBS)))
$(O)/tests/test_pkcs11: HOST_CFLAGS += $(SERVICES_CFLAGS) $(P11_CFLAGS)
$(O)/san/tests/test_pkcs11: SAN_CFLAGS += $(SERVICES_CFLAGS) $(P11_CFLAGS)
$(O)/tests/test_pkcs11 $(O)/san/tests/test_pkcs11: $(wildcard services/pkcs11/guest/*.h services/common/*.h)
# A test fixture (services/pkcs11/testing/p11_host_token.c): the same
# handler served on a socket, for the suites that drive the module with
# real programs where no KVM runs the guest.
$(O)/tests/p11_host_token: services/pkcs11/testing/p11_host_token.c $(P11_HOST_OBJ) $(wildcard services/pkcs11/guest/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) $(SERVICES_CFLAGS) $(P11_CFLAGS) -o $@ $< $(P11_HOST_OBJ) $(P11_HOST_LIBS)
ALL_TARGETS += $(O)/tests/p11_host_token
# pkcs11_java.bats's Java program (services/pkcs11/testing/P11Java.java),
# compiled here once where a JDK is, so that the suite starts one JVM per
# token and no compiler (the SVM tier emulates the CPU: javac there costs
# more than the program). Without javac the suite runs the source itself.
ifneq ($(shell command -v javac 2>/dev/null),)
$(O)/tests/java/P11Java.class: services/pkcs11/testing/P11Java.java
	@mkdir -p $(dir $@)
	javac -d $(dir $@) $<
ALL_TARGETS += $(O)/tests/java/P11Java.class
endif

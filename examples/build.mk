# SPDX-License-Identifier: ISC
# Example guests: hello, the one `make demo` boots. Nothing installed is
# built from here (the key services are services/).
$(eval $(call guest_elf,$(O)/examples/hello.elf,$(O)/guest/examples/hello/hello.o))
ALL_TARGETS += $(O)/examples/hello.elf

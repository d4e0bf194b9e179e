# SPDX-License-Identifier: ISC
# The hypercall dispatcher over the checked-access module (fuzz_hypercall.c):
# up to 24 guest calls of 70 bytes each per input.
FUZZ_TARGETS += hypercall
FUZZ_ARGS_hypercall := -max_len=1680

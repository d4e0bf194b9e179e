/* SPDX-License-Identifier: ISC */
/*
 * The monitor's one error convention. A step that can fail takes a
 * `struct fail *`; on failure it fills in the exit status and a one-line
 * message (what is wrong and what to do) and returns -1, so a caller can
 * `return fail_set(f, CLOAK_EXIT_..., "...", ...);`. main() prints the
 * line once, prefixed "cloak: ", and exits with the status.
 */
#ifndef CLOAK_FAIL_H
#define CLOAK_FAIL_H

#include "exit_status.h"

struct fail {
	int status;    /* CLOAK_EXIT_*, 0 while nothing failed */
	char msg[512]; /* one line, no "cloak: " prefix, no newline */
};

/* Records the first failure only (a later one would describe a
 * consequence); always returns -1. */
int fail_set(struct fail *f, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Puts "prefix: " before the message (e.g. the file it is about). */
void fail_prefix(struct fail *f, const char *prefix);

#endif

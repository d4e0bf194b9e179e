/* SPDX-License-Identifier: ISC */
/*
 * How a run ends, and the lines it prints on the way: both the vCPU runner
 * and the device process keep one (each its own). The first reason to end
 * the VM wins; later ones are printed but change nothing.
 */
#ifndef CLOAK_OUTCOME_H
#define CLOAK_OUTCOME_H

#include <stdbool.h>

struct outcome {
	bool stopped; /* the VM ends; status says how */
	int status;   /* CLOAK_EXIT_* or the guest's own status */
	bool verbose; /* --verbose: outcome_verbose() lines are printed */
	bool quiet;   /* --quiet */
};

/* Ends the VM: one line on stderr ("cloak: ..."), the outcome marked
 * stopped with `status` unless it already was. Always -1, so a handler
 * can `return outcome_fail(...)`. */
int outcome_fail(struct outcome *o, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Ends the VM with `status` and no line (the guest's own exit). -1. */
int outcome_end(struct outcome *o, int status);
/* An informational line, only with --verbose. */
void outcome_verbose(const struct outcome *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif

/* SPDX-License-Identifier: ISC */
/*
 * Helpers for libcloak's tests: running a scenario in a fresh child process
 * (this test binary run again with `--scenario NAME`, so the library starts
 * from its environment, as a real program would), and catching faults the
 * same way with or without AddressSanitizer.
 */
#ifndef CLOAK_TESTS_LIBCLOAK_CHILD_H
#define CLOAK_TESTS_LIBCLOAK_CHILD_H

#include <stdbool.h>
#include <stddef.h>

/* Exit code of a child whose SIGSEGV/SIGBUS handler ran (see catch_faults). */
#define FAULT_EXIT 42

struct scenario {
	const char *name;
	int (*run)(void); /* its return value is the exit code */
};

struct child_result {
	bool exited;     /* true: exit code in `code`; false: killed by `signal` */
	int code, signal;
	char out[8192];  /* stdout and stderr together */
};

/* In main(): if argv asks for a scenario, runs it and exits. */
void scenario_dispatch(int argc, char **argv, const struct scenario *table);
/* Runs scenario `name` in a child with `env` (NULL-terminated "K=V" list) added
 * to the environment; core dumps are off unless `cores_in_dir` names a
 * directory for the child to dump its core in. */
void run_scenario(const char *name, const char *const *env, const char *cores_in_dir,
                  struct child_result *r);
/* In a cmocka test: runs scenario `name` with `env` (as run_scenario does)
 * and fails the test unless the child was killed by signal `how` (`killed`)
 * or exited with code `how` (not `killed`), and, if `out_has` is not NULL,
 * printed it. Returns the result, valid until the next call. */
const struct child_result *expect_end(const char *name, const char *const *env, bool killed,
                                      int how, const char *out_has);
static inline const struct child_result *expect_exit(const char *name, const char *const *env,
                                                     int code, const char *out_has)
{
	return expect_end(name, env, false, code, out_has);
}
static inline const struct child_result *expect_signal(const char *name, const char *const *env,
                                                       int sig, const char *out_has)
{
	return expect_end(name, env, true, sig, out_has);
}
/* Makes SIGSEGV and SIGBUS end the process with FAULT_EXIT. */
void catch_faults(void);
/* True when the test must fail rather than skip (CLOAK_REQUIRE_KVM=1). */
bool skip_forbidden(void);
/* For main(): prints a TAP plan of zero with a SKIP reason and exits 0 when
 * memfd_secret is unavailable (or exits 1 if skipping is forbidden). */
void require_secretmem_or_skip_all(void);
/* Drops CAP_IPC_LOCK (so RLIMIT_MEMLOCK applies to root) and sets the
 * limit to `bytes`; false on failure. */
bool limit_locked_memory(unsigned long bytes);
/* Whether this process may lock `bytes` of memory (CAP_IPC_LOCK, or a soft
 * limit that is, or can be raised to, that much); if not, `why` says so and
 * how to fix it. */
bool locked_memory_available(unsigned long long bytes, char *why, size_t n);
/* In a cmocka test: SKIP it (with the reason and the fix) when the host does
 * not let it lock `bytes`, or fail if CLOAK_REQUIRE_KVM=1. */
#define REQUIRE_LOCKED_MEMORY(bytes)                                                     \
	do {                                                                             \
		char why_[256];                                                          \
		if (!locked_memory_available((bytes), why_, sizeof why_)) {              \
			if (skip_forbidden())                                            \
				fail_msg("%s, and CLOAK_REQUIRE_KVM=1 forbids skipping", why_); \
			print_message("# SKIP %s\n", why_);                              \
			skip();                                                          \
		}                                                                        \
	} while (0)

#endif

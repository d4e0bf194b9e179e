/* SPDX-License-Identifier: ISC */
/* Command-line parsing for `cloak`, kept apart from main() so it can be
 * unit-tested without KVM. */
#ifndef CLOAK_CLI_OPTIONS_H
#define CLOAK_CLI_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fail.h"
#include "guest_limits.h"
#include "mem/guestmem.h"

#define OPT_DEVICES_MAX 8

struct options {
	uint64_t mem;         /* bytes, 2 MiB multiple within CLOAK_MEM_MIN..MAX */
	uint64_t timeout_ms;  /* 0: no watchdog */
	enum gm_backend backend;
	bool backend_auto;    /* no --memory (or --memory=auto): the strongest that runs */
	bool quiet, verbose;
	bool no_sandbox;      /* debugging aid: skip the seccomp filter */
	bool device_process;  /* calls and devices in a process apart (runner/device_link.h);
			       * off only with --no-device-isolation */
	bool check;           /* `cloak check`: probe the host, run no guest */
	bool json;            /* `cloak check --json` */
	const char *block[OPT_DEVICES_MAX];   /* raw --block specs */
	unsigned nblock;
	const char *channel[OPT_DEVICES_MAX]; /* raw --channel specs */
	unsigned nchannel;
	const char *dump_shared; /* test builds: file to dump shared pages into */
	const char *guest;    /* ELF path */
	int guest_argc;       /* arguments after the ELF (after "--") */
	char **guest_argv;
};

enum opt_result { OPT_RUN = 0, OPT_EXIT_OK = 1, OPT_ERROR = -1 };

/* Parses argv. OPT_EXIT_OK: --help/--version printed to `out`. OPT_ERROR:
 * one-line reason in *f (CLOAK_EXIT_USAGE). */
enum opt_result options_parse(int argc, char **argv, struct options *o, struct fail *f,
			      void *out /* FILE* */);

/* "64M", "1G", "4096K", "8388608": bytes, overflow-checked. 0 or -1. */
int parse_size(const char *s, uint64_t *out);
/* "10", "0.5", "2.25": milliseconds, overflow-checked. 0 or -1; also -1
 * for a non-zero time below a millisecond, which would mean "never". */
int parse_seconds(const char *s, uint64_t *ms);

#endif

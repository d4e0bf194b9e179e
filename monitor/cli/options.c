/* SPDX-License-Identifier: ISC */
/* Command-line parsing; see options.h. */
#include "options.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloak/abi.h"
#include "exit_status.h"

int parse_size(const char *s, uint64_t *out)
{
	if (!s || *s < '0' || *s > '9')
		return -1;
	uint64_t v = 0;
	while (*s >= '0' && *s <= '9') {
		if (__builtin_mul_overflow(v, 10, &v) ||
		    __builtin_add_overflow(v, (uint64_t)(*s - '0'), &v))
			return -1;
		s++;
	}
	unsigned shift = 0;
	switch (*s) {
	case 'k': case 'K': shift = 10; s++; break;
	case 'm': case 'M': shift = 20; s++; break;
	case 'g': case 'G': shift = 30; s++; break;
	default: break;
	}
	if (*s == 'i' && shift) /* accept KiB/MiB/GiB spelling too */
		s++;
	if (*s == 'B' || *s == 'b')
		s++;
	if (*s)
		return -1;
	if (shift && v > (UINT64_MAX >> shift))
		return -1;
	*out = v << shift;
	return 0;
}

int parse_seconds(const char *s, uint64_t *ms)
{
	if (!s || *s < '0' || *s > '9')
		return -1;
	uint64_t whole = 0, frac = 0;
	bool nonzero = false; /* any non-zero digit, even below a millisecond */
	while (*s >= '0' && *s <= '9') {
		if (__builtin_mul_overflow(whole, 10, &whole) ||
		    __builtin_add_overflow(whole, (uint64_t)(*s - '0'), &whole))
			return -1;
		nonzero |= *s != '0';
		s++;
	}
	if (*s == '.') {
		s++;
		unsigned digits = 0;
		if (*s < '0' || *s > '9')
			return -1;
		while (*s >= '0' && *s <= '9') {
			nonzero |= *s != '0';
			if (digits < 3) {
				frac = frac * 10 + (uint64_t)(*s - '0');
				digits++;
			}
			s++;
		}
		while (digits++ < 3)
			frac *= 10;
	}
	uint64_t total;
	if (*s || __builtin_mul_overflow(whole, 1000, &whole) ||
	    __builtin_add_overflow(whole, frac, &total) || (total == 0 && nonzero))
		return -1;
	*ms = total;
	return 0;
}

static void usage(FILE *f)
{
	fputs("usage: cloak [OPTIONS] GUEST.elf [--] [GUEST ARGS...]\n"
	      "       cloak check [--json]\n"
	      "Runs a 64-bit ELF guest in a KVM virtual machine with protected memory.\n"
	      "\n"
	      "  -m, --mem=SIZE          guest memory (K/M/G suffix; 4M..16G, multiple of 2M;\n"
	      "                          default 64M)\n"
	      "      --memory=BACKEND    auto (default: the strongest this host runs),\n"
	      "                          secret (memfd_secret), gmem (guest_memfd),\n"
	      "                          shared (plain memfd, NO protection)\n"
	      "  -t, --timeout=SECONDS   stop the guest after SECONDS of wall time (0 = never;\n"
	      "                          millisecond precision)\n"
	      "      --block=NAME=PATH[,ro][,sector=512|4096]   attach a disk image\n"
	      "      --channel=NAME=listen:PATH[,mode=0600]|connect:PATH|fd:N\n"
	      "                          byte stream to a Unix socket (fd:N: a listening\n"
	      "                          socket passed as descriptor N, as systemd does)\n"
	      "      --dump-shared=FILE  at exit, write every page the guest shared to FILE,\n"
	      "                          which must not exist (what the host could see)\n"
	      "      --no-device-isolation  make calls and run devices in the process that\n"
	      "                          holds every guest page and the vCPU, not in a\n"
	      "                          process apart that maps only shared pages (faster\n"
	      "                          for call-heavy guests on one CPU; for benchmarks)\n"
	      "      --no-sandbox        debugging aid (valgrind, sanitizers): run without\n"
	      "                          the seccomp syscall filter\n"
	      "  -q, --quiet             print nothing but errors\n"
	      "  -v, --verbose           report KVM capabilities, backend and calls\n"
	      "  -h, --help              this text\n"
	      "  -V, --version           version and ABI version\n"
	      "\n"
	      "Exit status:\n", f);
	fprintf(f, "  %3d-%-3d the guest's own exit status\n", 0, CLOAK_EXIT_STATUS_MAX);
#define USAGE_STATUS_(v, NAME, text) fprintf(f, "  %-7d %s\n", v, text);
	CLOAK_EXIT_STATUSES(USAGE_STATUS_)
#undef USAGE_STATUS_
}

static int parse_backend(const char *s, enum gm_backend *b, bool *automatic)
{
	*automatic = false;
	if (!strcmp(s, "auto"))
		*automatic = true;
	else if (!strcmp(s, "secret"))
		*b = GM_BACKEND_SECRET;
	else if (!strcmp(s, "gmem"))
		*b = GM_BACKEND_GMEM;
	else if (!strcmp(s, "shared"))
		*b = GM_BACKEND_SHARED;
	else
		return -1;
	return 0;
}

enum { OPT_MEMORY = 256, OPT_BLOCK, OPT_CHANNEL, OPT_JSON, OPT_DUMP_SHARED, OPT_NO_SANDBOX,
       OPT_NO_DEVICE_ISOLATION };

enum opt_result options_parse(int argc, char **argv, struct options *o, struct fail *f,
			      void *outp)
{
	FILE *out = outp;
	static const struct option longopts[] = {
		{ "mem", required_argument, NULL, 'm' },
		{ "memory", required_argument, NULL, OPT_MEMORY },
		{ "timeout", required_argument, NULL, 't' },
		{ "block", required_argument, NULL, OPT_BLOCK },
		{ "channel", required_argument, NULL, OPT_CHANNEL },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "dump-shared", required_argument, NULL, OPT_DUMP_SHARED },
		{ "no-sandbox", no_argument, NULL, OPT_NO_SANDBOX },
		{ "no-device-isolation", no_argument, NULL, OPT_NO_DEVICE_ISOLATION },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	memset(o, 0, sizeof *o);
	o->mem = CLOAK_MEM_DEFAULT;
	o->backend = GM_BACKEND_SECRET;
	o->backend_auto = true;
	o->device_process = true;
	int first = 1;
	if (argc > 1 && !strcmp(argv[1], "check")) {
		o->check = true;
		first = 2;
	}
	/* getopt_long on argv shifted past the subcommand; "+" stops at the
	 * first non-option so guest arguments are never taken as ours. */
	int gargc = argc - first + 1;
	char **gargv = argv + first - 1;
	optind = 1;
	opterr = 0;
	int c;
	while ((c = getopt_long(gargc, gargv, "+:m:t:qvhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (parse_size(optarg, &o->mem)) {
				fail_set(f, CLOAK_EXIT_USAGE, "--mem=%s: not a size; use e.g. 64M or 1G", optarg);
				return OPT_ERROR;
			}
			if (o->mem < CLOAK_MEM_MIN || o->mem > CLOAK_MEM_MAX ||
			    o->mem % CLOAK_MEM_ALIGN) {
				fail_set(f, CLOAK_EXIT_USAGE, "--mem=%s: guest memory must be a multiple "
					 "of 2M between 4M and 16G", optarg);
				return OPT_ERROR;
			}
			break;
		case OPT_MEMORY:
			if (parse_backend(optarg, &o->backend, &o->backend_auto)) {
				fail_set(f, CLOAK_EXIT_USAGE, "--memory=%s: unknown backend; use "
					 "auto, secret, gmem or shared", optarg);
				return OPT_ERROR;
			}
			break;
		case 't':
			if (parse_seconds(optarg, &o->timeout_ms) || o->timeout_ms > 1000000000ull) {
				fail_set(f, CLOAK_EXIT_USAGE, "--timeout=%s: not a number of seconds "
					 "from 0.001 to 1000000 (e.g. 10 or 0.5; 0 for none)", optarg);
				return OPT_ERROR;
			}
			break;
		case OPT_BLOCK:
			if (o->nblock == OPT_DEVICES_MAX) {
				fail_set(f, CLOAK_EXIT_USAGE, "--block: at most %d block devices", OPT_DEVICES_MAX);
				return OPT_ERROR;
			}
			o->block[o->nblock++] = optarg;
			break;
		case OPT_CHANNEL:
			if (o->nchannel == OPT_DEVICES_MAX) {
				fail_set(f, CLOAK_EXIT_USAGE, "--channel: at most %d channels", OPT_DEVICES_MAX);
				return OPT_ERROR;
			}
			o->channel[o->nchannel++] = optarg;
			break;
		case 'q': o->quiet = true; break;
		case 'v': o->verbose = true; break;
		case OPT_JSON: o->json = true; break;
		case OPT_DUMP_SHARED: o->dump_shared = optarg; break;
		case OPT_NO_SANDBOX: o->no_sandbox = true; break;
		case OPT_NO_DEVICE_ISOLATION: o->device_process = false; break;
		case 'h':
			usage(out);
			return OPT_EXIT_OK;
		case 'V':
			fprintf(out, "cloak %s (guest ABI %u)\n", CLOAK_VERSION, CLOAK_ABI_VERSION);
			return OPT_EXIT_OK;
		case ':':
			fail_set(f, CLOAK_EXIT_USAGE, "%s needs a value; see cloak --help", gargv[optind - 1]);
			return OPT_ERROR;
		default:
			fail_set(f, CLOAK_EXIT_USAGE, "unknown option %s; see cloak --help",
				 gargv[optind - 1]);
			return OPT_ERROR;
		}
	}
	if (o->quiet && o->verbose) {
		fail_set(f, CLOAK_EXIT_USAGE, "--quiet and --verbose contradict each other; pick one");
		return OPT_ERROR;
	}
	if (o->check) {
		if (optind < gargc) {
			fail_set(f, CLOAK_EXIT_USAGE, "cloak check takes no guest (got %s)", gargv[optind]);
			return OPT_ERROR;
		}
		return OPT_RUN;
	}
	if (o->json) {
		fail_set(f, CLOAK_EXIT_USAGE, "--json goes with `cloak check`");
		return OPT_ERROR;
	}
	if (optind >= gargc) {
		fail_set(f, CLOAK_EXIT_USAGE, "no guest given; usage: cloak [OPTIONS] GUEST.elf [-- ARGS]");
		return OPT_ERROR;
	}
	o->guest = gargv[optind++];
	if (optind < gargc && !strcmp(gargv[optind], "--"))
		optind++;
	o->guest_argc = gargc - optind;
	o->guest_argv = gargv + optind;
	return OPT_RUN;
}

/* SPDX-License-Identifier: ISC */
/*
 * Host probing: the --verbose start-up line and `cloak check`, which probes
 * every memory backend on this host (hostcheck_probe.c, hostcheck_kvm.c)
 * and prints a table or, with --json, one JSON document.
 *
 * Exit status: 0 when every protection the default backend (secret)
 * promises holds here, 1 when one does not, CLOAK_EXIT_NOHOST when there is
 * no usable KVM. A protection that could not be observed (e.g. direct-map
 * counters that did not move) does not fail the check; it is reported as
 * "unknown" with the reason.
 */
#include "check.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cloak/abi.h"
#include "kvm/kvm.h"
#include "kvm/kvm_compat.h"
#include "probe.h"
#include "secretmem.h"

struct host_facts {
	char kernel[160];
	int kvm_api;    /* -1: no /dev/kvm */
	bool kvm_ok;    /* a VM could be created */
	char kvm_why[160];
	struct guest_memfd_caps caps;
	bool secretmem;
};

static void host_facts(struct host_facts *h)
{
	memset(h, 0, sizeof *h);
	struct utsname u;
	if (uname(&u) == 0)
		snprintf(h->kernel, sizeof h->kernel, "%s %s", u.sysname, u.release);
	struct kvm_host k;
	struct fail f = { 0 };
	h->kvm_ok = kvm_open(&k, &f) == 0;
	h->kvm_api = k.api;
	snprintf(h->kvm_why, sizeof h->kvm_why, "%.159s", f.msg);
	guest_memfd_probe(k.vm_fd, &h->caps);
	h->secretmem = secretmem_supported();
	kvm_close(&k);
}

static const char *verdict_word(enum probe_verdict v)
{
	return v == PV_YES ? "yes" : v == PV_NO ? "no" : "unknown";
}

static const enum gm_backend backends[] = { GM_BACKEND_SECRET, GM_BACKEND_GMEM,
					    GM_BACKEND_SHARED };
#define NBACKENDS (sizeof backends / sizeof backends[0])

/* The default backend's promises: which failed, which could not be seen. */
static bool default_holds(const struct backend_report *r, const struct guest_memfd_caps *caps)
{
	if (!r->available)
		return false;
	for (int i = 0; i < ROW_COUNT; i++)
		if (row_claimed(r->backend, (enum check_row)i, caps) && r->row[i].v == PV_NO)
			return false;
	return true;
}

static void print_table(const struct host_facts *h, const struct backend_report *rep,
			bool holds)
{
	printf("cloak check: guest memory protection on this host (%s)\n", h->kernel);
	printf("KVM: %s; guest_memfd flags 0x%llx%s; memfd_secret %s\n\n",
	       h->kvm_ok ? "usable" : h->kvm_why, (unsigned long long)h->caps.flags,
	       h->caps.flags & CLOAK_GUEST_MEMFD_FLAG_NO_DIRECT_MAP ? "" : " (no NO_DIRECT_MAP)",
	       h->secretmem ? "yes" : "no");
	printf("%-46s", "protection");
	for (size_t b = 0; b < NBACKENDS; b++)
		printf(" %-10s", gm_backend_name(backends[b]));
	printf("\n");
	for (int i = 0; i < ROW_COUNT; i++) {
		printf("%-46s", check_rows[i].title);
		for (size_t b = 0; b < NBACKENDS; b++) {
			char cell[16];
			snprintf(cell, sizeof cell, "%s%s", verdict_word(rep[b].row[i].v),
				 row_claimed(backends[b], (enum check_row)i, &h->caps) ? "*" : "");
			printf(" %-10s", cell);
		}
		printf("\n");
	}
	printf("(* = promised by that backend; \"unknown\" = could not be observed here)\n");
	for (size_t b = 0; b < NBACKENDS; b++) {
		printf("\n%s%s:\n", gm_backend_name(backends[b]),
		       backends[b] == GM_BACKEND_SECRET ? " (default)" : "");
		if (!rep[b].available) {
			printf("  not available: %s\n", rep[b].unavailable);
			continue;
		}
		for (int i = 0; i < ROW_COUNT; i++)
			printf("  %-7s %s: %s\n", verdict_word(rep[b].row[i].v), check_rows[i].title,
			       rep[b].row[i].how);
	}
	printf("\nThe monitor keeps guest RAM mapped on this host: KVM reads guest memory "
	       "through that mapping, so a compromised monitor process can read all guest "
	       "memory (see docs/threat-model.md).\n");
	printf("default backend (secret): %s\n", holds ? "every promised protection holds"
						     : "a promised protection does NOT hold");
}

static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void print_json(const struct host_facts *h, const struct backend_report *rep,
		       bool holds)
{
	printf("{\"host\":{\"kernel\":");
	json_string(h->kernel);
	printf(",\"kvm\":%s,\"kvm_api\":%d,\"guest_memfd\":%s,\"guest_memfd_flags\":%llu,"
	       "\"memfd_secret\":%s},",
	       h->kvm_ok ? "true" : "false", h->kvm_api, h->caps.guest_memfd ? "true" : "false",
	       (unsigned long long)h->caps.flags, h->secretmem ? "true" : "false");
	printf("\"default_backend\":\"secret\",\"default_holds\":%s,\"backends\":[",
	       holds ? "true" : "false");
	for (size_t b = 0; b < NBACKENDS; b++) {
		printf("%s{\"name\":\"%s\",\"available\":%s,\"reason\":", b ? "," : "",
		       gm_backend_name(backends[b]), rep[b].available ? "true" : "false");
		json_string(rep[b].unavailable);
		printf(",\"protections\":[");
		for (int i = 0; i < ROW_COUNT; i++) {
			printf("%s{\"id\":\"%s\",\"title\":", i ? "," : "", check_rows[i].id);
			json_string(check_rows[i].title);
			printf(",\"result\":\"%s\",\"promised\":%s,\"how\":",
			       verdict_word(rep[b].row[i].v),
			       row_claimed(backends[b], (enum check_row)i, &h->caps) ? "true"
										  : "false");
			json_string(rep[b].row[i].how);
			printf("}");
		}
		printf("]}");
	}
	printf("]}\n");
}

int check_run(const struct options *o)
{
	struct host_facts h;
	host_facts(&h);
	struct backend_report rep[NBACKENDS];
	for (size_t b = 0; b < NBACKENDS; b++)
		probe_backend(backends[b], h.kvm_ok, &h.caps, &rep[b]);
	bool holds = default_holds(&rep[0], &h.caps);
	if (o->json)
		print_json(&h, rep, holds);
	else
		print_table(&h, rep, holds);
	fflush(stdout);
	if (!h.kvm_ok) {
		fprintf(stderr, "cloak: %s\n", h.kvm_why);
		return CLOAK_EXIT_NOHOST;
	}
	return holds ? 0 : 1;
}

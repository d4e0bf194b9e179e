/* SPDX-License-Identifier: ISC */
/*
 * `cloak check`: probes every memory backend on this host (probe_mem.c,
 * probe_kvm.c) and prints a table or, with --json, one JSON document,
 * then a summary about the default: the backend --memory=auto picks here.
 *
 * Exit status, each meaning exactly what the summary line says:
 *   0  a default run can start here (a 64 MiB guest) and every protection
 *      its backend promises was seen to hold;
 *   1  a promised protection was seen NOT to hold, or no default run can
 *      start here (no protected backend runs, or a limit is too low);
 *   2  none was seen to fail, but some could not be observed here;
 *   CLOAK_EXIT_NOHOST (249)  no usable KVM.
 */
#include "check.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>

#include "cloak/abi.h"
#include "kvm/kvm.h"
#include "kvm/kvm_compat.h"
#include "guest_limits.h"
#include "mem/select.h"
#include "probe.h"
#include "secretmem.h"

#define DEFAULT_RUN_MEM CLOAK_MEM_DEFAULT

struct host_facts {
	char kernel[160];
	int kvm_api;    /* -1: no /dev/kvm */
	bool kvm_ok;    /* a VM could be created */
	char kvm_why[200];
	struct gm_host host; /* what --memory=auto decides from */
	bool has_default;
	enum gm_backend default_backend;
	char no_default[400]; /* why no backend is chosen */
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
	snprintf(h->kvm_why, sizeof h->kvm_why, "%.199s", f.msg);
	gm_host_probe(k.vm_fd, &h->host);
	kvm_close(&k);
	struct fail sf = { 0 };
	h->has_default = gm_select(&h->host, &h->default_backend, &sf) == 0;
	snprintf(h->no_default, sizeof h->no_default, "%.399s", sf.msg);
}

static const char *verdict_word(enum probe_verdict v)
{
	return v == PV_YES ? "yes" : v == PV_NO ? "no" : "unknown";
}

static const enum gm_backend backends[] = { GM_BACKEND_SECRET, GM_BACKEND_GMEM,
					    GM_BACKEND_SHARED };
#define NBACKENDS (sizeof backends / sizeof backends[0])

/* The verdict about the default: counts of promised rows by result, and
 * whether a default run (a 64 MiB guest) can start at all. */
struct summary {
	const struct backend_report *rep; /* the default backend's, or NULL */
	unsigned held, failed, unseen;
	bool runs;
	char runs_why[400];
	int status;
};

static void summarize(const struct host_facts *h, const struct backend_report *rep,
		      struct summary *s)
{
	memset(s, 0, sizeof *s);
	if (!h->has_default) {
		snprintf(s->runs_why, sizeof s->runs_why, "%s", h->no_default);
		s->status = 1;
		return;
	}
	for (size_t b = 0; b < NBACKENDS; b++)
		if (backends[b] == h->default_backend)
			s->rep = &rep[b];
	s->runs = s->rep->available && s->rep->row[ROW_KVM_RUN].v == PV_YES;
	if (!s->rep->available)
		snprintf(s->runs_why, sizeof s->runs_why, "%s", s->rep->unavailable);
	else if (!s->runs)
		snprintf(s->runs_why, sizeof s->runs_why, "%s", s->rep->row[ROW_KVM_RUN].how);
	if (s->runs && h->default_backend == GM_BACKEND_SECRET && !memlock_ensure(DEFAULT_RUN_MEM)) {
		struct memlock_info mi;
		memlock_query(&mi);
		s->runs = false;
		snprintf(s->runs_why, sizeof s->runs_why, "RLIMIT_MEMLOCK (%llu KiB) is below the "
			 "%llu MiB a default guest locks: raise it (docs/running.md) or use a smaller "
			 "--mem", (unsigned long long)(mi.hard >> 10),
			 (unsigned long long)(DEFAULT_RUN_MEM >> 20));
	}
	/* memfd and memfd_secret guest memory is a file sized by ftruncate,
	 * which the file size limit bounds (mem/backend.c); KVM sizes a
	 * guest_memfd itself. */
	struct rlimit fsize;
	if (s->runs && h->default_backend != GM_BACKEND_GMEM &&
	    getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY &&
	    fsize.rlim_cur < DEFAULT_RUN_MEM) {
		s->runs = false;
		snprintf(s->runs_why, sizeof s->runs_why, "the file size limit (ulimit -f, systemd "
			 "LimitFSIZE: %llu KiB) is below the %llu MiB of a default guest's memory: "
			 "raise it or use a smaller --mem", (unsigned long long)(fsize.rlim_cur >> 10),
			 (unsigned long long)(DEFAULT_RUN_MEM >> 20));
	}
	for (int i = 0; s->rep->available && i < ROW_COUNT; i++) {
		if (!row_claimed(h->default_backend, (enum check_row)i, &h->host.guest_memfd))
			continue;
		enum probe_verdict v = s->rep->row[i].v;
		if (v == PV_YES)
			s->held++;
		else if (v == PV_NO)
			s->failed++;
		else
			s->unseen++;
	}
	s->status = !s->runs || s->failed ? 1 : s->unseen ? 2 : 0;
}

static void print_summary(const struct host_facts *h, const struct summary *s)
{
	if (!h->has_default) {
		printf("default (--memory=auto): no protected backend runs here: %s\n", s->runs_why);
		return;
	}
	printf("default (--memory=auto): %s; of the %u protections it promises, %u hold, %u "
	       "do NOT, %u could not be observed here\n", gm_backend_name(h->default_backend),
	       s->held + s->failed + s->unseen, s->held, s->failed, s->unseen);
	if (s->runs)
		printf("a default run (--mem=64M) can start here\n");
	else
		printf("a default run (--mem=64M) can NOT start here: %s\n", s->runs_why);
}

/* How guest code runs here: only a usable KVM runs any, and then the CPU's
 * flags say which kind it is. Without one, the flags only say what a KVM
 * module could use. */
static const char *kvm_kind_text(const struct host_facts *h)
{
	if (!h->kvm_ok)
		return h->host.hw_virt ? "no KVM runs guest code here; the CPU has VMX/SVM"
				       : "no KVM runs guest code here; the CPU has no VMX/SVM";
	return h->host.hw_virt ? "runs guest code natively (VMX/SVM)" : "emulates guest code";
}

static const char *kvm_kind_json(const struct host_facts *h)
{
	return !h->kvm_ok ? "none" : h->host.hw_virt ? "hardware" : "emulating";
}

static void print_table(const struct host_facts *h, const struct backend_report *rep,
			const struct summary *s)
{
	printf("cloak check: guest memory protection on this host (%s)\n", h->kernel);
	printf("KVM: %s (%s); guest_memfd flags 0x%llx%s; memfd_secret %s\n\n",
	       h->kvm_ok ? "usable" : h->kvm_why, kvm_kind_text(h),
	       (unsigned long long)h->host.guest_memfd.flags,
	       h->host.guest_memfd.flags & CLOAK_GUEST_MEMFD_FLAG_NO_DIRECT_MAP ? ""
										 : " (no NO_DIRECT_MAP)",
	       h->host.secretmem ? "yes" : "no");
	printf("%-46s", "protection");
	for (size_t b = 0; b < NBACKENDS; b++)
		printf(" %-10s", gm_backend_name(backends[b]));
	printf("\n");
	for (int i = 0; i < ROW_COUNT; i++) {
		printf("%-46s", check_rows[i].title);
		for (size_t b = 0; b < NBACKENDS; b++) {
			char cell[16];
			snprintf(cell, sizeof cell, "%s%s", verdict_word(rep[b].row[i].v),
				 row_claimed(backends[b], (enum check_row)i, &h->host.guest_memfd) ? "*" : "");
			printf(" %-10s", cell);
		}
		printf("\n");
	}
	printf("(* = promised by that backend; \"unknown\" = could not be observed here)\n");
	for (size_t b = 0; b < NBACKENDS; b++) {
		printf("\n%s%s:\n", gm_backend_name(backends[b]),
		       h->has_default && backends[b] == h->default_backend ? " (default here)" : "");
		if (!rep[b].available) {
			printf("  not available: %s\n", rep[b].unavailable);
			continue;
		}
		for (int i = 0; i < ROW_COUNT; i++)
			printf("  %-7s %s: %s\n", verdict_word(rep[b].row[i].v), check_rows[i].title,
			       rep[b].row[i].how);
	}
	printf("\n");
	print_summary(h, s);
}

static void json_string(const char *str)
{
	putchar('"');
	for (; *str; str++) {
		unsigned char c = (unsigned char)*str;
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
		       const struct summary *s)
{
	printf("{\"host\":{\"kernel\":");
	json_string(h->kernel);
	printf(",\"kvm\":%s,\"kvm_api\":%d,\"kvm_kind\":\"%s\",\"guest_memfd\":%s,"
	       "\"guest_memfd_flags\":%llu,\"memfd_secret\":%s},",
	       h->kvm_ok ? "true" : "false", h->kvm_api, kvm_kind_json(h),
	       h->host.guest_memfd.guest_memfd ? "true" : "false",
	       (unsigned long long)h->host.guest_memfd.flags, h->host.secretmem ? "true" : "false");
	printf("\"default\":{\"backend\":");
	if (h->has_default)
		printf("\"%s\"", gm_backend_name(h->default_backend));
	else
		printf("null");
	printf(",\"runs\":%s,\"why_not\":", s->runs ? "true" : "false");
	json_string(s->runs ? "" : s->runs_why);
	printf(",\"promised_hold\":%u,\"promised_fail\":%u,\"promised_unobserved\":%u,"
	       "\"status\":%d},\"backends\":[", s->held, s->failed, s->unseen, s->status);
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
			       row_claimed(backends[b], (enum check_row)i, &h->host.guest_memfd) ? "true" : "false");
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
		probe_backend(backends[b], h.kvm_ok, &h.host.guest_memfd, &rep[b]);
	struct summary s;
	summarize(&h, rep, &s);
	if (o->json)
		print_json(&h, rep, &s);
	else
		print_table(&h, rep, &s);
	fflush(stdout);
	if (!h.kvm_ok) {
		fprintf(stderr, "cloak: %s\n", h.kvm_why);
		return CLOAK_EXIT_NOHOST;
	}
	return s.status;
}

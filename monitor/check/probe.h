/* SPDX-License-Identifier: ISC */
/*
 * The probes behind `cloak check`: for one memory backend, create guest
 * memory exactly as the monitor does (gm_create) and try every way the host
 * could reach it, on this machine, now. check.c turns the results into
 * the table and the JSON document.
 */
#ifndef CLOAK_CHECK_PROBE_H
#define CLOAK_CHECK_PROBE_H

#include <stdbool.h>

#include "mem/guest_memfd.h"
#include "mem/guestmem.h"

enum probe_verdict {
	PV_YES,     /* the host provides the protection: seen to hold */
	PV_NO,      /* it does not: seen to fail, or absent by capability */
	PV_UNKNOWN, /* could not be observed here (the reason says why) */
};

enum check_row {
	ROW_DIRECT_MAP,
	ROW_IMAGE_MAP,
	ROW_VM_READV,
	ROW_PROC_MEM,
	ROW_VMSPLICE,
	ROW_O_DIRECT,
	ROW_HIDDEN,
	ROW_CORE_DUMP,
	ROW_FORK,
	ROW_WIPE,
	ROW_KVM_RUN,
	ROW_DEVICES_APART,
	ROW_COUNT
};

struct row_info {
	const char *id;    /* JSON key */
	const char *title; /* table text */
};
extern const struct row_info check_rows[ROW_COUNT];

struct row_result {
	enum probe_verdict v;
	char how[360]; /* how it was verified, one line */
};

struct backend_report {
	enum gm_backend backend;
	bool available;
	char unavailable[320]; /* gm_create's reason when !available */
	struct row_result row[ROW_COUNT];
};

/* Whether `backend` promises protection `row` on this host (what its
 * verdict counts for): e.g. only guest_memfd where KVM runs guest code
 * natively promises to hide guest RAM from the monitor (it gives its
 * mapping up); where KVM emulates guest code it needs that mapping. */
bool row_claimed(enum gm_backend backend, enum check_row row, const struct guest_memfd_caps *caps);

/* One row's verdict and how it was seen (printf-style, one line). */
void probe_set(struct row_result *r, enum probe_verdict v, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* An errno as its name ("EPERM"), "success" for 0. */
const char *probe_errname(int e);

/* Probes one backend. kvm_ok: /dev/kvm can create VMs (needed for gmem and
 * for the KVM row). Prints nothing. */
void probe_backend(enum gm_backend backend, bool kvm_ok, const struct guest_memfd_caps *caps,
		   struct backend_report *out);

#endif

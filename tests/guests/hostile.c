/* SPDX-License-Identifier: ISC */
/*
 * A hostile guest: hypercalls with bad arguments. Scenarios that the ABI
 * answers with an error code print "NAME ret=N" and continue; scenarios
 * that must end the VM are selected alone with argv[1].
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cloak/block.h"
#include "cloak/guest.h"
#include "raw_calls.h"

static void out32(uint16_t port, uint32_t v)
{
	__asm__ volatile("outl %0, %w1" : : "a"(v), "Nd"(port) : "memory");
}

static char private_secret[4096] __attribute__((aligned(4096))) = "PRIVATE-SECRET-0123456789";

static void error_cases(void)
{
	uint64_t mem = cloak_boot_info()->mem_size;
	size_t bsz;
	unsigned char *bounce = cloak_bounce_area(&bsz);
	report("console_beyond_end", console(mem, 16));
	report("console_straddles_end", console(mem - 8, 16));
	report("console_len_too_big", console((uintptr_t)bounce, UINT64_MAX));
	report("console_wraps", console(UINT64_MAX - 7, 16));
	report("console_private", console((uintptr_t)private_secret, 16));
	/* Shared at the start, private at the end: refused whole. */
	report("console_straddles_private", console((uintptr_t)bounce + bsz - 8, 16));
	report("console_null", console(0, 16));
	report("random_too_big", rnd((uintptr_t)bounce, CLOAK_RANDOM_MAX + 1));
	report("random_beyond_end", rnd(mem - 4, 8));
	report("random_private", rnd((uintptr_t)private_secret, 8));
	report("share_unaligned", share(CLOAK_HC_SHARE, 0x100001, 1));
	report("share_zero_pages", share(CLOAK_HC_SHARE, 0x100000, 0));
	report("share_wraps", share(CLOAK_HC_SHARE, 0x100000, UINT64_MAX / 4096 + 2));
	report("share_beyond_end", share(CLOAK_HC_SHARE, mem - 4096, 2));
	report("unshare_beyond_end", share(CLOAK_HC_UNSHARE, mem, 1));
	memset(&blk, 0, sizeof blk.nop);
	report("unknown_call", cloak_hypercall(CLOAK_HC_MAX - 1, &blk.nop));
	/* A range that was shared and then unshared is refused again. Where
	 * the shared window is fixed at PROTECT (the monitor gave memory up, or
	 * its calls run in a device process), the share itself is refused
	 * (EPERM). */
	printf("window_fixed=%d\n", (cloak_protection() & (CLOAK_PROT_NO_VMM_MAP |
							    CLOAK_PROT_DEVICES_APART)) ? 1 : 0);
	report("share_private_page", share(CLOAK_HC_SHARE, (uintptr_t)private_secret, 1));
	report("console_shared_then", console((uintptr_t)private_secret, 14));
	printf("\n");
	share(CLOAK_HC_UNSHARE, (uintptr_t)private_secret, 1);
	report("console_after_unshare", console((uintptr_t)private_secret, 16));
	report("console_ok", console((uintptr_t)bounce, 0));
	printf("strerror(-3) = %s\n", cloak_strerror(-CLOAK_EACCES));
	printf("strerror(14) = %s\n", cloak_strerror(CLOAK_EPERM));
	printf("strerror(-99) = %s\n", cloak_strerror(-99));
}

/* BLOCK_BATCH on device "d" (a zeroed image of at least 8 sectors, read-
 * write unless ro): refusals of the whole batch, then one batch whose
 * requests each fail their own way around good ones. */
#define REQ(o, off, b, l) ((struct cloak_block_req){ .op = (o), .offset = (off), .buf = (b), .len = (l) })
static void batch_cases(int ro)
{
	struct cloak_block d;
	if (cloak_block_open("d", &d)) {
		printf("no device d\n");
		return;
	}
	size_t bsz;
	unsigned char *pool = cloak_bounce_area(&bsz);
	struct cloak_block_req *r = (struct cloak_block_req *)pool;
	uint64_t h = d.handle, s = d.sector_size, cap = d.capacity;
	uint64_t mem = cloak_boot_info()->mem_size, a = (uintptr_t)r;
	uint64_t data = (uintptr_t)pool + 8192, rd = data + 4096;
	if (ro) {
		r[0] = REQ(CLOAK_BLOCK_WRITE, 0, data, s);
		r[1] = REQ(CLOAK_BLOCK_READ, 0, rd, s);
		r[2] = REQ(CLOAK_BLOCK_FLUSH, 0, 0, 0);
		report("ro_batch", block_batch(h, a, 3));
		report("ro_write", r[0].ret);
		report("ro_read", r[1].ret);
		report("ro_flush", r[2].ret);
		return;
	}
	for (unsigned i = 0; i <= CLOAK_BLOCK_BATCH_MAX; i++)
		r[i] = REQ(CLOAK_BLOCK_READ, 0, rd, s);
	report("batch_count_zero", block_batch(h, a, 0));
	report("batch_count_over", block_batch(h, a, CLOAK_BLOCK_BATCH_MAX + 1));
	report("batch_count_huge", block_batch(h, a, UINT64_MAX));
	report("batch_unaligned", block_batch(h, a + 4, 1));
	report("batch_bad_handle", block_batch(99, a, 1));
	report("batch_array_private", block_batch(h, (uintptr_t)private_secret, 1));
	report("batch_array_beyond_end", block_batch(h, mem - 40, 2));
	report("batch_array_wraps", block_batch(h, UINT64_MAX - 7, 1));
	/* Its first request in the pool, its second in private memory. */
	report("batch_array_straddles", block_batch(h, (uintptr_t)pool + bsz - 40, 2));
	report("batch_max", block_batch(h, a, CLOAK_BLOCK_BATCH_MAX));
	/* One batch, each request failing its own way around good ones. The
	 * first READs a zero sector over the array itself: the requests after
	 * it still run as they were when the call began (the monitor's copy),
	 * so the WRITE of "BATCH-OVERLAP" to sector 1 lands. */
	memcpy((void *)(uintptr_t)data, "BATCH-OVERLAP", 14);
	static const char *const names[] = {
		"overlap_read", "overlap_write", "zero_len", "past_end", "straddle_end", "wraps",
		"buf_private", "buf_straddles", "buf_outside", "bad_op", "too_big", "flush_len",
		"flush", "same_buf_twice",
	};
	enum { N = sizeof names / sizeof names[0] };
	struct cloak_block_req q[N] = {
		REQ(CLOAK_BLOCK_READ, 0, a, s),
		REQ(CLOAK_BLOCK_WRITE, s, data, s),
		REQ(CLOAK_BLOCK_READ, 0, rd, 0),
		REQ(CLOAK_BLOCK_READ, cap, rd, s),
		REQ(CLOAK_BLOCK_READ, cap - s, rd, 2 * s),
		REQ(CLOAK_BLOCK_WRITE, UINT64_MAX - s + 1, data, 2 * s),
		REQ(CLOAK_BLOCK_WRITE, 2 * s, (uintptr_t)private_secret, s),
		REQ(CLOAK_BLOCK_WRITE, 2 * s, (uintptr_t)pool + bsz - s / 2, s),
		REQ(CLOAK_BLOCK_READ, 0, mem - s / 2, s),
		REQ(7, 0, rd, s),
		REQ(CLOAK_BLOCK_READ, 0, rd, CLOAK_BLOCK_IO_MAX + s),
		REQ(CLOAK_BLOCK_FLUSH, 0, 0, s),
		REQ(CLOAK_BLOCK_FLUSH, 0, 0, 0),
		REQ(CLOAK_BLOCK_READ, s, data, s),
	};
	memcpy(r, q, sizeof q);
	report("batch_mixed", block_batch(h, a, N));
	for (unsigned i = 0; i < N; i++) {
		char name[40];
		snprintf(name, sizeof name, "req_%s", names[i]);
		report(name, r[i].ret);
	}
}

/* After PROTECT: sharing a page that was private, and unsharing the
 * monitor window (docs/abi.md). */
static void share_after_protect(void)
{
	static char page[4096] __attribute__((aligned(4096)));
	page[0] = 1;
	report("share_after_protect", share(CLOAK_HC_SHARE, (uintptr_t)page, 1));
	report("unshare_window", share(CLOAK_HC_UNSHARE, CLOAK_GPA_MONITOR_WINDOW, 1));
	/* Its last page, and a range that only reaches into it: refused
	 * whole; the page just below it is ordinary (private, so a no-op). */
	report("unshare_window_last", share(CLOAK_HC_UNSHARE, CLOAK_GPA_MONITOR_WINDOW +
					    (CLOAK_MONITOR_WINDOW_PAGES - 1) * 4096ull, 1));
	report("unshare_into_window", share(CLOAK_HC_UNSHARE, CLOAK_GPA_MONITOR_WINDOW - 4096, 2));
	report("unshare_below_window", share(CLOAK_HC_UNSHARE, CLOAK_GPA_MONITOR_WINDOW - 4096, 1));
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "errors";
	if (!strcmp(what, "share_after_protect")) {
		share_after_protect();
		return 0;
	}
	if (!strcmp(what, "errors")) {
		error_cases();
		return 0;
	}
	if (!strcmp(what, "batch") || !strcmp(what, "batch_ro")) {
		batch_cases(what[5] == '_');
		return 0;
	}
	if (!strcmp(what, "block_outside")) /* argument block beyond RAM */
		out32(CLOAK_HC_PORT_BASE + CLOAK_HC_CONSOLE, 0xfffffff0u);
	if (!strcmp(what, "block_unaligned"))
		out32(CLOAK_HC_PORT_BASE + CLOAK_HC_CONSOLE, (uint32_t)(uintptr_t)&blk + 4);
	if (!strcmp(what, "block_private"))
		out32(CLOAK_HC_PORT_BASE + CLOAK_HC_CONSOLE, (uint32_t)(uintptr_t)private_secret);
	if (!strcmp(what, "block_straddles_end")) {
		uint64_t mem = cloak_boot_info()->mem_size;
		out32(CLOAK_HC_PORT_BASE + CLOAK_HC_ABORT, (uint32_t)(mem - 8));
	}
	if (!strcmp(what, "null_port")) { /* the bench's bare exit: ignored */
		for (uint32_t v = 0; v < 3; v++)
			out32(CLOAK_PORT_NULL, v ? 0xffffffffu : 0);
		return 0;
	}
	if (!strcmp(what, "null_port_b"))
		__asm__ volatile("outb %b0, %w1" : : "a"(0), "Nd"((uint16_t)CLOAK_PORT_NULL));
	if (!strcmp(what, "null_port_in")) {
		uint32_t v;
		__asm__ volatile("inl %w1, %0" : "=a"(v) : "Nd"((uint16_t)CLOAK_PORT_NULL));
	}
	if (!strcmp(what, "unknown_port"))
		out32(0x600, 0);
	if (!strcmp(what, "port_below"))
		out32(CLOAK_HC_PORT_BASE - 1, 0);
	if (!strcmp(what, "wrong_size_b"))
		__asm__ volatile("outb %b0, %w1" : : "a"(0), "Nd"((uint16_t)CLOAK_HC_PORT_BASE + 1));
	if (!strcmp(what, "wrong_size_w"))
		__asm__ volatile("outw %w0, %w1" : : "a"(0), "Nd"((uint16_t)CLOAK_HC_PORT_BASE + 1));
	if (!strcmp(what, "port_in")) {
		uint32_t v;
		__asm__ volatile("inl %w1, %0" : "=a"(v) : "Nd"((uint16_t)CLOAK_HC_PORT_BASE + 1));
	}
	if (!strcmp(what, "string_io")) {
		uint32_t v[2] = { 0, 0 };
		const void *p = v;
		uint64_t n = 2;
		__asm__ volatile("rep outsl" : "+S"(p), "+c"(n) : "d"((uint16_t)CLOAK_HC_PORT_BASE + 1) : "memory");
	}
	if (!strcmp(what, "mmio")) {
		/* Map a 2 MiB page past the end of RAM into our own page tables
		 * (identity map, PD of the first GiB) and touch it: no memslot
		 * there, so KVM exits with MMIO, which the monitor refuses. */
		uint64_t mem = cloak_boot_info()->mem_size, cr3;
		__asm__ volatile("mov %%cr3, %0" : "=r"(cr3));
		const uint64_t *pml4 = (const uint64_t *)(uintptr_t)(cr3 & ~0xfffull);
		const uint64_t *pdpt = (const uint64_t *)(uintptr_t)(pml4[0] & 0x000ffffffffff000ull);
		volatile uint64_t *pd = (uint64_t *)(uintptr_t)(pdpt[0] & 0x000ffffffffff000ull);
		uint64_t idx = mem / (2u << 20);
		pd[idx] = (idx * (2u << 20)) | 0x83;
		__asm__ volatile("mov %%cr3, %%rax; mov %%rax, %%cr3" ::: "rax", "memory");
		(void)*(volatile uint64_t *)(uintptr_t)(idx * (2u << 20));
	}
	return 3;
}

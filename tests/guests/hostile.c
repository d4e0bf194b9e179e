/* SPDX-License-Identifier: ISC */
/*
 * A hostile guest: hypercalls with bad arguments. Scenarios that the ABI
 * answers with an error code print "NAME ret=N" and continue; scenarios
 * that must end the VM are selected alone with argv[1].
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

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
	 * the monitor gave memory up, the share itself is refused (EPERM). */
	printf("no_vmm_map=%d\n", (cloak_protection() & CLOAK_PROT_NO_VMM_MAP) ? 1 : 0);
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

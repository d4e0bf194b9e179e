/* SPDX-License-Identifier: ISC */
/* Initial page tables: identity map, page 0 absent, per-segment access in
 * the image (W^X, no-execute data), guard pages in its holes, bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "cloak/abi.h"
#include "guest_limits.h"
#include "x86/pagetable.h"
#include "x86/vcpu_wipe.h"

#define BASE CLOAK_GPA_PAGETABLES
#define ABSENT UINT64_MAX

struct walk {
	uint64_t pa;
	int write, exec; /* effective: all levels */
};

/* Walks the tables in buf like the MMU would (with NX enabled). */
static struct walk walk(const uint64_t *buf, uint64_t va)
{
	struct walk w = { ABSENT, 1, 1 };
	uint64_t table = BASE;
	for (int level = 3; level >= 0; level--) {
		uint64_t e = buf[(table - BASE) / 8 + ((va >> (12 + 9 * level)) & 511)];
		if (!(e & X86_PTE_P))
			return (struct walk){ ABSENT, 0, 0 };
		w.write &= (e & X86_PTE_W) != 0;
		w.exec &= (e & X86_PTE_NX) == 0;
		uint64_t addr = e & 0x000ffffffffff000ull;
		if (level == 0 || (level == 1 && (e & X86_PTE_PS))) {
			uint64_t span = level ? (1ull << 21) : (1ull << 12);
			w.pa = (addr & ~(span - 1)) | (va & (span - 1));
			return w;
		}
		table = addr;
	}
	return w;
}

static uint64_t *build(const struct pt_spec *sp)
{
	size_t n = pt_bytes(sp);
	assert_true(n > 0);
	assert_true(n <= CLOAK_GPA_GUEST_MIN - BASE); /* fits the reserved area */
	uint64_t *buf = calloc(1, n);
	assert_int_equal(pt_build(sp, BASE, buf, n), BASE);
	return buf;
}

static void check_identity(uint64_t mem)
{
	struct pt_spec sp = { .mem_size = mem, .nx = true };
	uint64_t *buf = build(&sp);
	assert_int_equal(walk(buf, 0).pa, ABSENT);
	assert_int_equal(walk(buf, 0xfff).pa, ABSENT);
	uint64_t probes[] = { 0x1000, 0x1234, 0x10000, 0x1fffff, 0x200000, 0x100000,
			      mem / 2 + 8, mem - 8, mem - 0x200000 };
	for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
		struct walk w = walk(buf, probes[i]);
		assert_int_equal(w.pa, probes[i]);
		assert_true(w.write);
		assert_false(w.exec); /* nothing outside the image is executable */
	}
	assert_int_equal(walk(buf, mem).pa, ABSENT);
	assert_int_equal(walk(buf, mem + 0x200000).pa, ABSENT);
	assert_int_equal(walk(buf, 1ull << 39).pa, ABSENT);
	free(buf);
}

static void test_sizes(void **state)
{
	check_identity(CLOAK_MEM_MIN);
	check_identity(64ull << 20);
	check_identity(1ull << 30);
	check_identity((1ull << 30) + (2ull << 20)); /* spills into a second PD */
	check_identity(CLOAK_MEM_MAX);
}

/* The runtime's layout: text, rodata, data+bss, a hole, the stack. */
static void test_image_access(void **state)
{
	const struct pt_range img[] = {
		{ 0x100000, 0x104000, false, true }, /* text */
		{ 0x104000, 0x105000, false, false }, /* rodata */
		{ 0x105000, 0x127000, true, false }, /* data, bss */
		/* 0x127000: guard page */
		{ 0x128000, 0x148000, true, false }, /* stack */
	};
	/* What a probe in each part may do. */
	const struct {
		uint64_t va;
		int write, exec;
	} probes[] = {
		{ 0x100010, 0, 1 }, /* text */
		{ 0x104100, 0, 0 }, /* rodata */
		{ 0x110000, 1, 0 }, /* data, bss */
		{ 0x147ff8, 1, 0 }, /* stack */
		{ 0x148000, 1, 0 }, /* the heap after the image */
		{ CLOAK_GPA_BOOTINFO, 1, 0 }, /* the reserved area before it */
	};
	struct pt_spec sp = { .mem_size = 64ull << 20, .ranges = img, .nranges = 4, .nx = true };
	uint64_t *buf = build(&sp);
	assert_int_equal(walk(buf, 0x100010).pa, 0x100010);
	for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
		struct walk w = walk(buf, probes[i].va);
		if (w.write != probes[i].write)
			fail_msg("%#llx: write %d, expected %d", (unsigned long long)probes[i].va,
			         w.write, probes[i].write);
		if (w.exec != probes[i].exec)
			fail_msg("%#llx: exec %d, expected %d", (unsigned long long)probes[i].va,
			         w.exec, probes[i].exec);
	}
	assert_int_equal(walk(buf, 0x127000).pa, ABSENT); /* the guard page */
	assert_int_equal(walk(buf, 0x127fff).pa, ABSENT);
	free(buf);

	/* Without NX, nothing carries the bit, and writability still holds. */
	sp.nx = false;
	buf = build(&sp);
	struct walk w = walk(buf, 0x110000);
	assert_true(w.exec);
	assert_false(walk(buf, 0x100010).write);
	free(buf);
}

/* An image past 2 MiB gets 4 KiB pages up to its end, 2 MiB pages after. */
static void test_large_image(void **state)
{
	const struct pt_range img[] = { { 0x100000, 0x500000, false, true },
					{ 0x600000, 0x700000, true, false } };
	struct pt_spec sp = { .mem_size = 64ull << 20, .ranges = img, .nranges = 2, .nx = true };
	uint64_t *buf = build(&sp);
	assert_true(walk(buf, 0x4ff000).exec);
	assert_int_equal(walk(buf, 0x500000).pa, ABSENT); /* hole */
	assert_int_equal(walk(buf, 0x5ff000).pa, ABSENT);
	assert_true(walk(buf, 0x6ff000).write);
	assert_true(walk(buf, 0x700000).write); /* heap, 4 KiB region */
	assert_int_equal(walk(buf, 0x800123).pa, 0x800123); /* 2 MiB pages from here */
	free(buf);
}

static void test_rejects(void **state)
{
	uint64_t buf[64 * 512];
	struct pt_spec sp = { .mem_size = CLOAK_MEM_MIN - (2ull << 20) };
	assert_int_equal(pt_bytes(&sp), 0);
	sp.mem_size = CLOAK_MEM_MAX + (2ull << 20);
	assert_int_equal(pt_build(&sp, BASE, buf, sizeof buf), 0);
	sp.mem_size = (64ull << 20) + 4096;
	assert_int_equal(pt_build(&sp, BASE, buf, sizeof buf), 0);
	sp.mem_size = 64ull << 20;
	assert_int_equal(pt_build(&sp, BASE + 8, buf, sizeof buf), 0);
	assert_int_equal(pt_build(&sp, BASE, buf, 4096), 0); /* buffer too small */
	/* Ranges must be page aligned, ordered, above the reserved area and
	 * inside memory. */
	struct pt_range bad[] = { { 0x100800, 0x102000, false, true } };
	sp.ranges = bad;
	sp.nranges = 1;
	assert_int_equal(pt_bytes(&sp), 0);
	bad[0] = (struct pt_range){ 0x80000, 0x102000, false, true };
	assert_int_equal(pt_bytes(&sp), 0);
	bad[0] = (struct pt_range){ 0x102000, 0x101000, false, true };
	assert_int_equal(pt_bytes(&sp), 0);
	bad[0] = (struct pt_range){ 0x100000, (64ull << 20) + 4096, false, true };
	assert_int_equal(pt_bytes(&sp), 0);
	/* The largest image the ABI allows still fits the reserved area. */
	bad[0] = (struct pt_range){ 0x100000, CLOAK_GPA_IMAGE_END_MAX, false, true };
	sp.mem_size = CLOAK_MEM_MAX;
	assert_true(pt_bytes(&sp) <= CLOAK_GPA_GUEST_MIN - BASE);
}

/* The vCPU wipe's plan covers all of guest memory but the monitor window,
 * once, and each pass's tables map its 4 GiB at virtual 0 and the window's
 * program at 511 GiB. */
static void test_vcpu_wipe_plan(void **state)
{
	const uint64_t sizes[] = { CLOAK_MEM_MIN, 64ull << 20, 4ull << 30, (4ull << 30) + (2ull << 20),
				   10ull << 30, CLOAK_MEM_MAX };
	const uint64_t w = CLOAK_GPA_MONITOR_WINDOW;
	const uint64_t wend = w + CLOAK_MONITOR_WINDOW_PAGES * CLOAK_PAGE_SIZE;
	for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
		uint64_t mem = sizes[k], covered = 0, next = 0;
		struct vcpu_wipe_pass p[VCPU_WIPE_PASSES_MAX];
		unsigned n = vcpu_wipe_plan(mem, p);
		assert_int_equal(n, (mem + VCPU_WIPE_PASS_BYTES - 1) / VCPU_WIPE_PASS_BYTES);
		for (unsigned i = 0; i < n; i++) {
			assert_int_equal(p[i].base, (uint64_t)i * VCPU_WIPE_PASS_BYTES);
			/* Ranges are virtual, inside the pass, in order, 8-byte units. */
			assert_int_equal(p[i].base + p[i].r1, next);
			next = p[i].base + p[i].r1 + p[i].n1;
			if (i == 0) {
				assert_int_equal(next, w); /* stops at the window */
				assert_int_equal(p[i].r2, wend);
				next = p[i].r2 + p[i].n2;
			} else {
				assert_int_equal(p[i].n2, 0);
			}
			assert_true(p[i].r1 + p[i].n1 <= VCPU_WIPE_PASS_BYTES);
			assert_true(p[i].r2 + p[i].n2 <= VCPU_WIPE_PASS_BYTES);
			assert_int_equal((p[i].n1 | p[i].n2) % 8, 0);
			covered += p[i].n1 + p[i].n2;
		}
		assert_int_equal(next, mem);
		assert_int_equal(covered, mem - (wend - w));
	}
	static uint64_t t[7][512];
	vcpu_wipe_tables(8ull << 30, t);
	const uint64_t rw = X86_PTE_P | X86_PTE_W;
	assert_int_equal(t[0][0], (w + 0x2000) | rw);           /* PML4 -> PDPT */
	assert_int_equal(t[1][511], (w + 0x3000) | rw);         /* 511 GiB -> the program's PD */
	assert_int_equal(t[2][0], 0 | rw | X86_PTE_PS);         /* ... -> guest-physical 0 */
	for (unsigned i = 0; i < 4; i++) {
		assert_int_equal(t[1][i], (w + 0x4000 + i * 0x1000ull) | rw);
		assert_int_equal(t[3 + i][0], ((8ull << 30) + i * (1ull << 30)) | rw | X86_PTE_PS);
		assert_int_equal(t[3 + i][511], ((8ull << 30) + i * (1ull << 30) + 511 * (2ull << 20)) |
						rw | X86_PTE_PS);
	}
	assert_int_equal(t[1][4], 0); /* nothing past the pass */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vcpu_wipe_plan),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_image_access),
		cmocka_unit_test(test_large_image),
		cmocka_unit_test(test_rejects),
	};
	return cmocka_run_group_tests_name("pagetable", tests, NULL, NULL);
}

/* Initial page tables: identity map, null page absent, bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "cloak/abi.h"
#include "pagetable.h"

#define BASE CLOAK_GPA_PAGETABLES

/* Walks the tables in buf like the MMU would; returns the physical address
 * or UINT64_MAX if not present. */
static uint64_t walk(const uint64_t *buf, uint64_t va)
{
	const uint64_t *pml4 = buf;
	uint64_t e = pml4[(va >> 39) & 511];
	if (!(e & PTE_P))
		return UINT64_MAX;
	const uint64_t *pdpt = buf + ((e & ~0xfffull) - BASE) / 8;
	e = pdpt[(va >> 30) & 511];
	if (!(e & PTE_P))
		return UINT64_MAX;
	const uint64_t *pd = buf + ((e & ~0xfffull) - BASE) / 8;
	e = pd[(va >> 21) & 511];
	if (!(e & PTE_P))
		return UINT64_MAX;
	if (e & PTE_PS)
		return (e & ~0x1fffffull & ~(1ull << 63)) | (va & 0x1fffff);
	const uint64_t *pt = buf + ((e & ~0xfffull) - BASE) / 8;
	e = pt[(va >> 12) & 511];
	if (!(e & PTE_P))
		return UINT64_MAX;
	return (e & ~0xfffull) | (va & 0xfff);
}

static void check_size(uint64_t mem)
{
	size_t n = pt_bytes(mem);
	uint64_t *buf = calloc(1, n);
	assert_int_equal(pt_build(mem, BASE, buf, n), BASE);
	/* Page 0 unmapped, everything else in RAM identity mapped. */
	assert_int_equal(walk(buf, 0), UINT64_MAX);
	assert_int_equal(walk(buf, 0xfff), UINT64_MAX);
	uint64_t probes[] = { 0x1000, 0x1234, 0x10000, 0x1fffff, 0x200000, 0x100000,
			      mem / 2 + 8, mem - 8, mem - 0x200000 };
	for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++)
		assert_int_equal(walk(buf, probes[i]), probes[i]);
	/* Nothing past the end of RAM. */
	assert_int_equal(walk(buf, mem), UINT64_MAX);
	assert_int_equal(walk(buf, mem + 0x200000), UINT64_MAX);
	assert_int_equal(walk(buf, 1ull << 39), UINT64_MAX);
	free(buf);
}

static void test_sizes(void **state)
{
	check_size(CLOAK_MEM_MIN);
	check_size(64ull << 20);
	check_size(1ull << 30);
	check_size((1ull << 30) + (2ull << 20)); /* spills into a second PD */
	check_size(CLOAK_MEM_MAX);
}

static void test_rejects(void **state)
{
	uint64_t buf[8 * 512];
	assert_int_equal(pt_build(CLOAK_MEM_MIN - (2ull << 20), BASE, buf, sizeof buf), 0);
	assert_int_equal(pt_build(CLOAK_MEM_MAX + (2ull << 20), BASE, buf, sizeof buf), 0);
	assert_int_equal(pt_build((64ull << 20) + 4096, BASE, buf, sizeof buf), 0);
	assert_int_equal(pt_build(64ull << 20, BASE + 8, buf, sizeof buf), 0);
	assert_int_equal(pt_build(64ull << 20, BASE, buf, 4096), 0); /* buffer too small */
	/* The tables fit in the reserved area below the guest image. */
	assert_true(BASE + pt_bytes(CLOAK_MEM_MAX) <= CLOAK_GPA_GUEST_MIN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_rejects),
	};
	return cmocka_run_group_tests_name("pagetable", tests, NULL, NULL);
}

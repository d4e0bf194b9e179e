/* Initial identity-mapped page tables; see pagetable.h.
 * Layout from `base`: PML4, PDPT, PT (first 2 MiB), then one PD per GiB. */
#include "pagetable.h"

#include "cloak/abi.h"

#define MIB2 (2ull << 20)
#define GIB (1ull << 30)
#define ENTRIES 512

static uint64_t gib_count(uint64_t mem_size)
{
	return (mem_size + GIB - 1) / GIB;
}

size_t pt_bytes(uint64_t mem_size)
{
	return (size_t)((3 + gib_count(mem_size)) * CLOAK_PAGE_SIZE);
}

uint64_t pt_build(uint64_t mem_size, uint64_t base, uint64_t *buf, size_t buflen)
{
	if (mem_size < CLOAK_MEM_MIN || mem_size > CLOAK_MEM_MAX || mem_size % MIB2 ||
	    base % CLOAK_PAGE_SIZE || buflen < pt_bytes(mem_size))
		return 0;
	uint64_t *pml4 = buf, *pdpt = buf + ENTRIES, *pt = buf + 2 * ENTRIES;
	uint64_t pdpt_gpa = base + CLOAK_PAGE_SIZE, pt_gpa = base + 2 * CLOAK_PAGE_SIZE;
	pml4[0] = pdpt_gpa | PTE_P | PTE_W;

	/* First 2 MiB in 4 KiB pages, page 0 left not-present. */
	for (uint64_t i = 1; i < ENTRIES; i++)
		pt[i] = (i * CLOAK_PAGE_SIZE) | PTE_P | PTE_W;

	uint64_t n2m = mem_size / MIB2;
	for (uint64_t g = 0; g < gib_count(mem_size); g++) {
		uint64_t *pd = buf + (3 + g) * ENTRIES;
		uint64_t pd_gpa = base + (3 + g) * CLOAK_PAGE_SIZE;
		pdpt[g] = pd_gpa | PTE_P | PTE_W;
		for (uint64_t i = 0; i < ENTRIES && g * ENTRIES + i < n2m; i++) {
			uint64_t addr = (g * ENTRIES + i) * MIB2;
			pd[i] = addr == 0 ? (pt_gpa | PTE_P | PTE_W) : (addr | PTE_P | PTE_W | PTE_PS);
		}
	}
	return base;
}

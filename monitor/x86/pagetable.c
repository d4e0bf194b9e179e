/* SPDX-License-Identifier: ISC */
/* Initial identity-mapped page tables; see pagetable.h.
 * Layout from `base`: PML4, PDPT, one PD per GiB, then the 4 KiB-page PTs
 * covering [0, fine_end). */
#include "pagetable.h"

#include "cloak/abi.h"
#include "guest_limits.h"

#define MIB2 (2ull << 20)
#define GIB (1ull << 30)
#define ENTRIES 512

static uint64_t gib_count(uint64_t mem_size)
{
	return (mem_size + GIB - 1) / GIB;
}

/* End of the 4 KiB-mapped region: the image's end rounded up to 2 MiB,
 * at least 2 MiB (so page 0 can be left out). */
static uint64_t fine_end(const struct pt_spec *sp)
{
	uint64_t end = MIB2;
	for (unsigned i = 0; i < sp->nranges; i++)
		if (sp->ranges[i].end > end)
			end = sp->ranges[i].end;
	return (end + MIB2 - 1) / MIB2 * MIB2;
}

static bool valid(const struct pt_spec *sp)
{
	if (sp->mem_size < CLOAK_MEM_MIN || sp->mem_size > CLOAK_MEM_MAX || sp->mem_size % MIB2)
		return false;
	for (unsigned i = 0; i < sp->nranges; i++) {
		const struct pt_range *r = &sp->ranges[i];
		if (r->start % CLOAK_PAGE_SIZE || r->end % CLOAK_PAGE_SIZE || r->start > r->end ||
		    r->start < CLOAK_GPA_GUEST_MIN || r->end > sp->mem_size)
			return false;
	}
	return fine_end(sp) <= sp->mem_size;
}

size_t pt_bytes(const struct pt_spec *sp)
{
	if (!valid(sp))
		return 0;
	return (size_t)((2 + gib_count(sp->mem_size) + fine_end(sp) / MIB2) * CLOAK_PAGE_SIZE);
}

/* The entry for 4 KiB page `addr`, below fine_end. */
static uint64_t fine_pte(const struct pt_spec *sp, uint64_t addr, uint64_t img_lo, uint64_t img_hi)
{
	uint64_t nx = sp->nx ? X86_PTE_NX : 0;
	if (addr == 0)
		return 0;
	if (addr < img_lo || addr >= img_hi) /* reserved area below, heap above */
		return addr | X86_PTE_P | X86_PTE_W | nx;
	bool in = false, w = false, x = false;
	for (unsigned i = 0; i < sp->nranges; i++) {
		const struct pt_range *r = &sp->ranges[i];
		if (addr >= r->start && addr < r->end) {
			in = true;
			w |= r->write;
			x |= r->exec;
		}
	}
	if (!in)
		return 0; /* a hole in the image: guard page */
	return addr | X86_PTE_P | (w ? X86_PTE_W : 0) | (x ? 0 : nx);
}

uint64_t pt_build(const struct pt_spec *sp, uint64_t base, uint64_t *buf, size_t buflen)
{
	size_t need = pt_bytes(sp);
	if (!need || base % CLOAK_PAGE_SIZE || buflen < need)
		return 0;
	uint64_t fine = fine_end(sp), npd = gib_count(sp->mem_size);
	uint64_t nx = sp->nx ? X86_PTE_NX : 0;
	uint64_t img_lo = UINT64_MAX, img_hi = 0;
	for (unsigned i = 0; i < sp->nranges; i++) {
		if (sp->ranges[i].start < img_lo)
			img_lo = sp->ranges[i].start;
		if (sp->ranges[i].end > img_hi)
			img_hi = sp->ranges[i].end;
	}
	uint64_t *pml4 = buf, *pdpt = buf + ENTRIES;
	pml4[0] = (base + CLOAK_PAGE_SIZE) | X86_PTE_P | X86_PTE_W;
	for (uint64_t g = 0; g < npd; g++) {
		uint64_t *pd = buf + (2 + g) * ENTRIES;
		pdpt[g] = (base + (2 + g) * CLOAK_PAGE_SIZE) | X86_PTE_P | X86_PTE_W;
		for (uint64_t i = 0; i < ENTRIES; i++) {
			uint64_t addr = (g * ENTRIES + i) * MIB2;
			if (addr >= sp->mem_size)
				break;
			if (addr >= fine) {
				pd[i] = addr | X86_PTE_P | X86_PTE_W | X86_PTE_PS | nx;
				continue;
			}
			/* Upper levels stay permissive: the 4 KiB entries decide. */
			uint64_t t = 2 + npd + addr / MIB2;
			pd[i] = (base + t * CLOAK_PAGE_SIZE) | X86_PTE_P | X86_PTE_W;
			uint64_t *pt = buf + t * ENTRIES;
			for (uint64_t k = 0; k < ENTRIES; k++)
				pt[k] = fine_pte(sp, addr + k * CLOAK_PAGE_SIZE, img_lo, img_hi);
		}
	}
	return base;
}

/*
 * Builds the guest's initial page tables: an identity map of guest RAM with
 * 2 MiB pages, except the first 2 MiB, which uses 4 KiB pages so that page 0
 * can stay unmapped (null dereferences fault in the guest).
 */
#ifndef CLOAK_PAGETABLE_H
#define CLOAK_PAGETABLE_H

#include <stddef.h>
#include <stdint.h>

#define PTE_P (1ull << 0)
#define PTE_W (1ull << 1)
#define PTE_PS (1ull << 7)

/* Page-table bytes needed for mem_size (a 2 MiB multiple up to
 * CLOAK_MEM_MAX): PML4 + PDPT + one PT + one PD per GiB. */
size_t pt_bytes(uint64_t mem_size);

/* Fills buf (pt_bytes(mem_size) bytes, zeroed by the caller) with tables
 * that will live at guest-physical `base` (4 KiB aligned). Returns the CR3
 * value (base of the PML4), or 0 if mem_size is unsupported. */
uint64_t pt_build(uint64_t mem_size, uint64_t base, uint64_t *buf, size_t buflen);

#endif

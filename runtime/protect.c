/* SPDX-License-Identifier: ISC */
/*
 * Memory protection, guest side (what the 2020 KVM proposal did with its
 * enable hypercall and forced swiotlb): share the call-block pages and one
 * bounce pool, then ask
 * the monitor to treat everything else as private. After that the monitor
 * can read or write only those pages.
 */
#include <stdint.h>

#include "cloak/block.h"
#include "cloak/guest.h"
#include "cloak/heap.h"
#include "rt.h"

extern char __shared_start[], __shared_end[];


unsigned char *rt_bounce;
size_t rt_bounce_size;
unsigned char *cloak_rt_block_cache;
size_t cloak_rt_block_cache_size;
uint64_t rt_protection; /* CLOAK_PROT_* flags once enabled, else 0 */
struct cloak_rt_io_window cloak_rt_io; /* nothing reachable until rt_protect_init() */

static struct cloak_hc_share share_block RT_SHARED;
static struct cloak_hc_protect protect_block RT_SHARED;

static int share_call(unsigned nr, void *p, size_t npages)
{
	share_block.gpa = (uint64_t)(uintptr_t)p;
	share_block.npages = npages;
	return (int)cloak_hypercall(nr, &share_block);
}

int cloak_share(void *p, size_t npages)
{
	return share_call(CLOAK_HC_SHARE, p, npages);
}

int cloak_unshare(void *p, size_t npages)
{
	return share_call(CLOAK_HC_UNSHARE, p, npages);
}

uint64_t cloak_protection(void)
{
	return rt_protection;
}

void *cloak_bounce_area(size_t *size)
{
	*size = rt_bounce_size;
	return rt_bounce;
}

void rt_protect_init(void *heap_start, void *heap_end)
{
	size_t npages = cloak_config_bounce_pages ? cloak_config_bounce_pages : 1;
	/* The block cache comes in the same shared run, before the pool
	 * (so that what follows the pool stays private), where the monitor
	 * offers block devices and KVM runs guest code on the CPU: there an
	 * exit costs as much as copying many pages. Where KVM emulates guest
	 * code it is the other way round (block_cache.c). */
	uint64_t want = CLOAK_CAP_BLOCK | CLOAK_CAP_NATIVE_CPU;
	size_t cache_pages = (rt_boot->capabilities & want) == want
				     ? cloak_config_block_cache_pages : 0;
	unsigned char *run = cloak_heap_boot(heap_start, heap_end, npages + cache_pages);
	if (!run)
		cloak_abort_msg("no memory for the bounce-buffer pool");
	if (cache_pages) {
		cloak_rt_block_cache = run;
		cloak_rt_block_cache_size = cache_pages * CLOAK_PAGE_SIZE;
	}
	rt_bounce = run + cache_pages * CLOAK_PAGE_SIZE;
	rt_bounce_size = npages * CLOAK_PAGE_SIZE;
	cloak_rt_io = (struct cloak_rt_io_window){ 0, UINTPTR_MAX, CLOAK_BLOCK_IO_MAX };
	if (cloak_config_protect && cloak_protect() != 0)
		cloak_abort_msg("monitor refused to enable memory protection");
}

int cloak_protect(void)
{
	if (rt_protection)
		return 0;
	size_t call_pages = (size_t)(__shared_end - __shared_start) / CLOAK_PAGE_SIZE;
	int r = cloak_share(__shared_start, call_pages);
	if (!r)
		r = cloak_share(rt_bounce - cloak_rt_block_cache_size,
				(cloak_rt_block_cache_size + rt_bounce_size) / CLOAK_PAGE_SIZE);
	if (!r)
		r = (int)cloak_hypercall(CLOAK_HC_PROTECT, &protect_block);
	if (!r) {
		rt_protection = protect_block.flags;
		cloak_rt_io = (struct cloak_rt_io_window){
			(uintptr_t)rt_bounce, (uintptr_t)rt_bounce + rt_bounce_size, CLOAK_BLOCK_IO_MAX };
	}
	return r;
}

/* SPDX-License-Identifier: ISC */
/*
 * The cloak guest runtime's API. A guest is an ordinary
 * `int main(int argc, char **argv)`; the runtime has, before main:
 * installed an IDT (CPU exceptions end the VM with a report), set up the
 * heap, and (unless the guest opted out) enabled memory protection and
 * shared one pool of bounce-buffer pages, through which all runtime I/O
 * is copied. Applications never handle sharing unless they want to.
 */
#ifndef CLOAK_GUEST_H
#define CLOAK_GUEST_H

#include <stddef.h>
#include <stdint.h>

#include "cloak/abi.h"

/* Guest configuration: define these in the guest to override defaults.
 *   const int cloak_config_protect = 0;        run without protection
 *   const unsigned cloak_config_bounce_pages = N;  bounce pool (default 64)
 *   const unsigned cloak_config_block_cache_pages = N;  block cache, where
 *       the monitor offers block devices (default 64; 0: none; cloak/block.h) */
extern const int cloak_config_protect;
extern const unsigned cloak_config_bounce_pages;
extern const unsigned cloak_config_block_cache_pages;

/* Boot information from the monitor (read-only view). */
const struct cloak_boot_info *cloak_boot_info(void);

/* Protection state: 0 when off, else the CLOAK_PROT_* flags the host
 * reported when the guest enabled it. */
uint64_t cloak_protection(void);

/* Enables protection now, for a guest built with cloak_config_protect = 0
 * that shares its own buffers first: the shared window is fixed at this
 * call (CLOAK_PROT_NO_VMM_MAP or CLOAK_PROT_DEVICES_APART, every run but
 * one monitor process that keeps guest memory mapped), so whatever must
 * stay reachable by the host is shared before it. Shares
 * the runtime's call pages and bounce pool itself. 0 or -CLOAK_E*. */
int cloak_protect(void);

/* Explicit sharing, page granular (gpa == guest virtual address here:
 * memory is identity mapped). Return 0 or -CLOAK_E*; with
 * CLOAK_PROT_NO_VMM_MAP or CLOAK_PROT_DEVICES_APART, sharing after
 * protection is -CLOAK_EPERM for a page outside the window fixed then. */
int cloak_share(void *page_aligned, size_t npages);
int cloak_unshare(void *page_aligned, size_t npages);

/* Console: bytes written or -CLOAK_E*. */
long cloak_console_write(const void *buf, size_t len);

_Noreturn void cloak_exit(int status);
_Noreturn void cloak_abort_msg(const char *msg);

/* Time. cloak_time_ns: monotonic nanoseconds since an arbitrary origin
 * (from the TSC); cloak_walltime_ns: since the Unix epoch. */
uint64_t cloak_time_ns(void);
uint64_t cloak_walltime_ns(void);
/* Sleeps in the monitor until timeout or an event in wait_set; returns 0 or
 * -CLOAK_E*, *ready (may be NULL) gets the ready devices. Inline (below),
 * like the block path: a zero-timeout poll is a loop's check for work. */
static inline int cloak_poll(uint64_t timeout_ns, uint64_t wait_set, uint64_t *ready);

/* A CLOAK_E* code (negative, as calls return it, or positive) as text:
 * "CLOAK_EACCES: buffer touches a page the guest has not shared". */
const char *cloak_strerror(long code);

/* Random bytes from the host. Returns 0 or -CLOAK_E*. */
int cloak_random(void *buf, size_t len);

/* Raw call: the block must be shared once protection is on. Returns the
 * block's ret. Inline: under instruction emulation every guest instruction
 * on this path costs as much as a fraction of the exit itself. */
#ifndef CLOAK_RT_HOST_TEST
static inline int64_t cloak_hypercall(unsigned nr, void *block)
{
	__asm__ volatile("outl %0, %w1"
			 :
			 : "a"((uint32_t)(uintptr_t)block), "Nd"((uint16_t)(CLOAK_HC_PORT_BASE + nr))
			 : "memory");
	return *(volatile int64_t *)block;
}
#else
/* The runtime's host unit tests (tests/unit/rt_block.mk) answer the calls
 * themselves, playing the monitor. */
int64_t cloak_rt_test_call(unsigned nr, void *block);
static inline int64_t cloak_hypercall(unsigned nr, void *block)
{
	cloak_rt_test_call(nr, block);
	return *(volatile int64_t *)block;
}
#endif

/* Bounce pool: the shared pages I/O is copied through. */
void *cloak_bounce_area(size_t *size);

/* Cheap cycle counter. */
static inline uint64_t cloak_rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

/* Bounce copies: the runtime's memcpy moves 8 bytes per `rep movsq` step,
 * which a KVM that emulates guest code runs about 8x faster than
 * `rep movsb` (where the CPU runs guest code, both are native). */
void *memcpy(void *restrict dst, const void *restrict src, size_t n);
static inline void cloak_copy(void *dst, const void *src, size_t n)
{
	memcpy(dst, src, n);
}

/* The runtime's argument block for POLL (in a shared page). */
extern struct cloak_hc_poll cloak_rt_poll_block;

static inline int cloak_poll(uint64_t timeout_ns, uint64_t wait_set, uint64_t *ready)
{
	cloak_rt_poll_block.timeout_ns = timeout_ns;
	cloak_rt_poll_block.wait_set = wait_set;
	int r = (int)cloak_hypercall(CLOAK_HC_POLL, &cloak_rt_poll_block);
	if (ready)
		*ready = cloak_rt_poll_block.ready_set;
	return r;
}

#endif

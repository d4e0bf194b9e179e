/*
 * Calls to the monitor. Each call's argument block lives in .data.shared,
 * the page(s) the runtime shares before it enables protection, so the
 * monitor can read them afterwards. One vCPU and no interrupts: a block is
 * never in use twice at once, except that a trap may arrive during a call,
 * which is why the trap path has its own block.
 */
#include <stdint.h>

#include "cloak/guest.h"
#include "rt.h"

int64_t cloak_hypercall(unsigned nr, void *block)
{
	uint32_t addr = (uint32_t)(uintptr_t)block;
	__asm__ volatile("outl %0, %w1"
			 :
			 : "a"(addr), "Nd"((uint16_t)(CLOAK_HC_PORT_BASE + nr))
			 : "memory");
	return *(volatile int64_t *)block;
}

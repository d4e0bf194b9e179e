/* SPDX-License-Identifier: ISC */
/* CPU exceptions: an IDT whose 32 vectors report to the monitor, which ends
 * the VM with the vector, error code and RIP (exit status 255). */
#include <stdint.h>

#include "cloak/guest.h"
#include "rt.h"

/* Its own block: a trap may come in the middle of another call. */
static struct cloak_hc_abort trap_block RT_SHARED;

struct trap_frame {
	uint64_t vector, error, rip, cs, rflags, rsp, ss;
};

_Noreturn void cloak_rt_trap(const struct trap_frame *f);
_Noreturn void cloak_rt_trap(const struct trap_frame *f)
{
	uint64_t cr2;
	__asm__ volatile("mov %%cr2, %0" : "=r"(cr2));
	trap_block = (struct cloak_hc_abort){ .vector = (uint32_t)f->vector,
					      .error_code = f->error, .rip = f->rip,
					      .rsp = f->rsp, .cr2 = cr2 };
	cloak_hypercall(CLOAK_HC_ABORT, &trap_block);
	for (;;)
		__asm__ volatile("hlt");
}

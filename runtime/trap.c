/* CPU exceptions: an IDT whose 32 vectors report to the monitor, which ends
 * the VM with the vector, error code and RIP (exit status 255). */
#include <stdint.h>

#include "cloak/guest.h"
#include "rt.h"

struct idt_entry {
	uint16_t off_lo, sel;
	uint8_t ist, attr;
	uint16_t off_mid;
	uint32_t off_hi, zero;
};

static struct idt_entry idt[32] __attribute__((aligned(16)));
extern const uint64_t cloak_rt_trap_stubs[32];

void rt_trap_init(void)
{
	for (int v = 0; v < 32; v++) {
		uint64_t a = cloak_rt_trap_stubs[v];
		idt[v] = (struct idt_entry){ .off_lo = (uint16_t)a, .sel = 8, .attr = 0x8e,
					     .off_mid = (uint16_t)(a >> 16),
					     .off_hi = (uint32_t)(a >> 32) };
	}
	struct {
		uint16_t limit;
		uint64_t base;
	} __attribute__((packed)) d = { sizeof idt - 1, (uint64_t)(uintptr_t)idt };
	__asm__ volatile("lidt %0" : : "m"(d));
}

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

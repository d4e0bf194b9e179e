/* Raises the CPU exception named by argv[1]; the runtime's IDT must catch
 * it and the monitor must report it (exit 255). */
#include <stdint.h>
#include <string.h>

#include "cloak/guest.h"

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";
	volatile uint64_t zero = 0;
	if (!strcmp(what, "ud"))
		__asm__ volatile("ud2");
	if (!strcmp(what, "de")) {
		volatile uint64_t x = 1;
		x = x / zero;
	}
	if (!strcmp(what, "gp")) /* non-canonical address */
		(void)*(volatile uint64_t *)0x8000000000000000ull;
	if (!strcmp(what, "null"))
		(void)*(volatile uint64_t *)(uintptr_t)zero;
	if (!strcmp(what, "null-write"))
		*(volatile uint64_t *)(uintptr_t)(zero + 8) = 1;
	if (!strcmp(what, "beyond")) /* past the end of guest RAM: not mapped */
		(void)*(volatile uint64_t *)(uintptr_t)(cloak_boot_info()->mem_size + 4096);
	if (!strcmp(what, "spin"))
		for (;;)
			__asm__ volatile("" ::: "memory");
	if (!strcmp(what, "vmcall"))
		__asm__ volatile("vmcall");
	if (!strcmp(what, "vmmcall"))
		__asm__ volatile("vmmcall");
	if (!strcmp(what, "triple")) { /* no IDT: the #UD becomes a triple fault */
		struct {
			uint16_t limit;
			uint64_t base;
		} __attribute__((packed)) none = { 0, 0 };
		__asm__ volatile("lidt %0; ud2" : : "m"(none));
	}
	if (!strcmp(what, "sse")) /* SSE arithmetic: not emulated on these hosts */
		__asm__ volatile("mulps %xmm0, %xmm0"); /* xmm0 is not ours to clobber under -mgeneral-regs-only; the guest never reaches the next line on an emulating host */
	if (!strcmp(what, "abort"))
		cloak_abort_msg("the guest gave up");
	if (!strcmp(what, "hlt"))
		__asm__ volatile("cli; hlt");
	return 3; /* unknown request */
}

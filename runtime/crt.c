/* SPDX-License-Identifier: ISC */
/* Guest start-up: boot info, IDT, heap, protection, then main(). */
#include <stdint.h>

#include "cloak/guest.h"
#include "cloak/heap.h"
#include "rt.h"

int main(int argc, char **argv);

/* The ABI note the monitor checks before it loads this guest. */
static const struct {
	uint32_t namesz, descsz, type;
	char name[8];
	struct cloak_note_abi desc;
} cloak_abi_note __attribute__((section(".note.cloak"), used, aligned(4))) = {
	6, sizeof(struct cloak_note_abi), CLOAK_NOTE_TYPE_ABI, "CLOAK",
	{ CLOAK_ABI_VERSION, 0 },
};

const struct cloak_boot_info *rt_boot;
extern char _end[];

const struct cloak_boot_info *cloak_boot_info(void)
{
	return rt_boot;
}

/* The IDT and its descriptor, laid out by the linker (runtime/idt.ld):
 * nothing to fill in at boot. */
extern const char cloak_rt_idtr[];

/* All CLOAK_ARGC_MAX arguments: the boot info has no slot left for the
 * NULL after them, so they are copied. */
static __attribute__((noinline, noreturn)) void main_full_argv(const struct cloak_boot_info *bi)
{
	char *argv[CLOAK_ARGC_MAX + 1];
	for (int i = 0; i < CLOAK_ARGC_MAX; i++)
		argv[i] = (char *)(uintptr_t)bi->argv[i];
	argv[CLOAK_ARGC_MAX] = 0;
	cloak_exit(main(CLOAK_ARGC_MAX, argv));
}

/* Every instruction here runs at every boot, and costs ~1 us on hosts
 * whose KVM emulates guest code: the path is kept short. */
_Noreturn void cloak_rt_start(struct cloak_boot_info *bi);
_Noreturn void cloak_rt_start(struct cloak_boot_info *bi)
{
	__asm__ volatile("lidt %0" : : "m"(*(const char(*)[10])cloak_rt_idtr));
	rt_boot = bi;
	uint32_t argc = bi->argc;
	if (bi->magic != CLOAK_BOOT_MAGIC || bi->abi_version != CLOAK_ABI_VERSION ||
	    argc > CLOAK_ARGC_MAX)
		cloak_abort_msg("boot info missing or from another ABI version");
	uintptr_t heap = (uintptr_t)bi->heap_start;
	if (heap < (uintptr_t)_end)
		heap = (uintptr_t)_end;
	rt_protect_init((void *)heap, (void *)(uintptr_t)bi->mem_size);
	if (argc == CLOAK_ARGC_MAX)
		main_full_argv(bi);
	/* argv is the boot info's own array (guest memory, private once
	 * protected), ended here whatever the monitor wrote after it. */
	char **argv = (char **)bi->argv;
	argv[argc] = 0;
	cloak_exit(main((int)argc, argv));
}

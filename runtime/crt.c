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

_Noreturn void cloak_rt_start(const struct cloak_boot_info *bi);
_Noreturn void cloak_rt_start(const struct cloak_boot_info *bi)
{
	rt_trap_init();
	rt_boot = bi;
	if (bi->magic != CLOAK_BOOT_MAGIC || bi->abi_version != CLOAK_ABI_VERSION)
		cloak_abort_msg("boot info missing or from another ABI version");
	uintptr_t heap = (uintptr_t)bi->heap_start;
	if (heap < (uintptr_t)_end)
		heap = (uintptr_t)_end;
	cloak_heap_init((void *)heap, (void *)(uintptr_t)bi->mem_size);
	rt_protect_init();
	int argc = (int)bi->argc;
	char *argv[CLOAK_ARGC_MAX + 1];
	for (int i = 0; i < argc && i < CLOAK_ARGC_MAX; i++)
		argv[i] = (char *)(uintptr_t)bi->argv[i];
	argv[argc] = 0;
	cloak_exit(main(argc, argv));
}

/*
 * guest_memfd: probing what the host's KVM offers and creating guest RAM
 * from it. On hosts that offer only MMAP|INIT_SHARED (these machines) the
 * memory is still reachable through the monitor's mapping; with
 * NO_DIRECT_MAP and private attributes it would not be.
 */
#ifndef CLOAK_GMEM_H
#define CLOAK_GMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gmem_caps {
	bool guest_memfd;     /* KVM_CAP_GUEST_MEMFD */
	bool user_memory2;    /* KVM_CAP_USER_MEMORY2 */
	uint64_t flags;       /* KVM_CAP_GUEST_MEMFD_FLAGS (0 if absent) */
	uint64_t attributes;  /* KVM_CAP_MEMORY_ATTRIBUTES */
	uint64_t vm_types;    /* KVM_CAP_VM_TYPES */
};

/* Probes through KVM_CHECK_EXTENSION on the VM fd (falls back to the
 * system fd semantics KVM uses when the VM fd is -1: all false). */
void gmem_probe(int vm_fd, struct gmem_caps *out);

/* What cloak would do with a host's guest_memfd: the flags to ask for and
 * the protections that would follow. Pure, so the paths that cannot run on
 * these machines (NO_DIRECT_MAP, private memory) are unit-tested with fake
 * capabilities (tests/unit/test_host_paths.c); they are not yet verified on
 * a real host that offers them. */
struct gmem_plan {
	uint64_t flags;          /* for KVM_CREATE_GUEST_MEMFD */
	bool no_direct_map;      /* pages leave the kernel direct map */
	bool private_possible;   /* host could keep pages private (attributes) */
};
int gmem_plan(const struct gmem_caps *caps, struct gmem_plan *out, char *err, size_t errlen);

/* Private/shared conversion (KVM_SET_MEMORY_ATTRIBUTES, VM-wide) on hosts
 * whose KVM offers KVM_MEMORY_ATTRIBUTE_PRIVATE for mappable guest_memfd:
 * a private page is then out of reach of the monitor's mapping and of GUP.
 * Not offered on these machines; unit-tested through gmem_ioctl, which
 * tests replace (tests/unit/test_guestmem.c). Returns 0 or -1 with errno. */
extern int (*gmem_ioctl)(int fd, unsigned long request, void *arg);
int gmem_set_private(int vm_fd, uint64_t gpa, uint64_t size, bool private_);

/* Creates a guest_memfd of `size` with the strongest flags this host
 * offers and maps it; fills *fd and *base. On failure writes a one-line
 * reason and the exit status. */
int gmem_map(int vm_fd, uint64_t size, int *fd, void **base, struct gmem_plan *plan,
	     char *err, size_t errlen, int *exit_status);

#endif

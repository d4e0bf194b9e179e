/*
 * cloak guest <-> monitor ABI.
 *
 * This header is compiled by both sides: the monitor (hosted, gnu11) and the
 * guest runtime (freestanding). It therefore uses only fixed-width types and
 * no libc. Every structure has a fixed layout (checked by _Static_assert) so
 * that both compilers agree byte for byte.
 *
 * Calling convention: the guest writes, with a 32-bit `outl`, the
 * guest-physical address of a call's argument block to port
 * CLOAK_HC_PORT_BASE + call number. Argument blocks are 8-byte aligned, lie
 * below 4 GiB and (once protection is enabled) in shared pages. Every block
 * starts with `int64_t ret`, which the monitor fills with 0 or a negative
 * CLOAK_E* code; IN fields are read by the monitor, OUT fields written by it.
 *
 * The version below is carried in an ELF note (CLOAK_NOTE_*) that the
 * monitor checks before loading a guest.
 */
#ifndef CLOAK_ABI_H
#define CLOAK_ABI_H

#include <stdint.h>

#define CLOAK_ABI_VERSION 1u

/* ELF note that declares the ABI a guest was built against. */
#define CLOAK_NOTE_NAME "CLOAK" /* namesz 6 including NUL */
#define CLOAK_NOTE_TYPE_ABI 0x434c4b01u
struct cloak_note_abi {
	uint32_t abi_version;
	uint32_t flags; /* reserved, 0 */
};

/* ------------------------------------------------------------------ */
/* Guest-physical memory layout.                                       */
/* ------------------------------------------------------------------ */
#define CLOAK_PAGE_SIZE 4096ull
#define CLOAK_PAGE_SHIFT 12
/* [0, 4 KiB) is never mapped: null dereferences fault. */
#define CLOAK_GPA_BOOTINFO 0x1000ull /* struct cloak_boot_info, 1 page  */
#define CLOAK_GPA_CMDLINE 0x2000ull  /* argv strings, CLOAK_CMDLINE_MAX */
#define CLOAK_CMDLINE_MAX 0x2000ull
#define CLOAK_GPA_GDT 0x4000ull      /* GDT, monitor-owned            */
#define CLOAK_GPA_TSS 0x5000ull      /* 64-bit TSS: IST1 for #PF, #DF */
/* Stack for IST1 (selected by the runtime's IDT for #PF and #DF), so that a
 * stack overflow into the guard page is reported rather than fatal. */
#define CLOAK_GPA_IST_STACK_TOP 0x8000ull /* grows down to 0x6000 */
#define CLOAK_GPA_PAGETABLES 0x10000ull /* page tables, monitor-owned */
/* Everything below this address is the monitor's reserved area; guest
 * ELF segments must be loaded at or above it. */
#define CLOAK_GPA_GUEST_MIN 0x100000ull
/* Image segments must end at or below this address: the image is mapped
 * with 4 KiB pages (per-segment access, guard pages in holes), and their
 * page tables must fit in the reserved area. */
#define CLOAK_GPA_IMAGE_END_MAX 0x10000000ull /* 256 MiB */

/* Guest memory size bounds accepted by the monitor. */
#define CLOAK_MEM_MIN (4ull << 20)
#define CLOAK_MEM_MAX (16ull << 30)

/* Boot information, at CLOAK_GPA_BOOTINFO; its address is also in %rdi at
 * entry. Written by the monitor before the first instruction. */
#define CLOAK_BOOT_MAGIC 0x4b4f4f42544f4f42ull /* "BOOTBOOK" */
#define CLOAK_ARGC_MAX 64
struct cloak_boot_info {
	uint64_t magic;
	uint32_t abi_version;
	uint32_t argc;
	uint64_t mem_size;      /* bytes of guest RAM, from GPA 0 */
	uint64_t heap_start;    /* first free page after the image */
	uint64_t tsc_khz;       /* guest TSC frequency */
	uint64_t capabilities;  /* CLOAK_CAP_* the monitor offers */
	uint64_t memory_backend; /* CLOAK_BACKEND_* */
	uint64_t argv[CLOAK_ARGC_MAX]; /* GPAs of NUL-terminated strings */
};

#define CLOAK_BACKEND_SHARED 0u /* plain memfd: no protection */
#define CLOAK_BACKEND_SECRET 1u /* memfd_secret */
#define CLOAK_BACKEND_GMEM 2u   /* guest_memfd */

/* Capability bits (boot info). */
#define CLOAK_CAP_PROTECT (1ull << 0) /* PROTECT_ENABLE/SHARE/UNSHARE */
#define CLOAK_CAP_BLOCK (1ull << 1)
#define CLOAK_CAP_CHANNEL (1ull << 2)

/* ------------------------------------------------------------------ */
/* Hypercalls.                                                         */
/* ------------------------------------------------------------------ */
#define CLOAK_HC_PORT_BASE 0x500u
#define CLOAK_HC_MAX 32u /* ports base .. base+MAX-1 belong to cloak */
/* An `outl` here exits to the monitor, which does nothing and resumes the
 * guest: the reference a call's overhead is measured against. */
#define CLOAK_PORT_NULL (CLOAK_HC_PORT_BASE + CLOAK_HC_MAX)

enum cloak_hc {
	CLOAK_HC_NOP = 0,          /* struct cloak_hc_nop */
	CLOAK_HC_CONSOLE = 1,      /* struct cloak_hc_console */
	CLOAK_HC_EXIT = 2,         /* struct cloak_hc_exit */
	CLOAK_HC_ABORT = 3,        /* struct cloak_hc_abort */
	CLOAK_HC_WALLTIME = 4,     /* struct cloak_hc_walltime */
	CLOAK_HC_POLL = 5,         /* struct cloak_hc_poll */
	CLOAK_HC_RANDOM = 6,       /* struct cloak_hc_random */
	CLOAK_HC_PROTECT = 7,      /* struct cloak_hc_protect */
	CLOAK_HC_SHARE = 8,        /* struct cloak_hc_share */
	CLOAK_HC_UNSHARE = 9,      /* struct cloak_hc_share */
	CLOAK_HC_BLOCK_INFO = 10,  /* struct cloak_hc_block_info */
	CLOAK_HC_BLOCK_IO = 11,    /* struct cloak_hc_block_io */
	CLOAK_HC_CHAN_OPEN = 12,   /* struct cloak_hc_chan_open */
	CLOAK_HC_CHAN_IO = 13,     /* struct cloak_hc_chan_io */
};

/* Error codes returned in `ret` (negated). */
#define CLOAK_EOK 0
#define CLOAK_EINVAL 1  /* malformed argument (alignment, zero count, ...) */
#define CLOAK_EFAULT 2  /* buffer outside guest memory or wraps around */
#define CLOAK_EACCES 3  /* buffer touches a page the guest has not shared */
#define CLOAK_ENOSYS 4  /* call not offered by this monitor */
#define CLOAK_ENOENT 5  /* no such device / channel name */
#define CLOAK_EIO 6     /* host I/O error */
#define CLOAK_EROFS 7   /* write to a read-only device */
#define CLOAK_ERANGE 8  /* offset/length beyond the end of a device */
#define CLOAK_EAGAIN 9  /* nothing available now; poll and retry */
#define CLOAK_EPIPE 10  /* peer closed the channel */
#define CLOAK_E2BIG 11  /* length larger than the call allows */
#define CLOAK_EBUSY 12  /* state conflict (e.g. protection already on) */
#define CLOAK_ETIMEDOUT 13 /* runtime only: a deadline passed before I/O could proceed */

struct cloak_hc_nop {
	int64_t ret;
};

/* Write `len` bytes at `buf` to the console. OUT ret: bytes written. */
#define CLOAK_CONSOLE_MAX 4096u
struct cloak_hc_console {
	int64_t ret;
	uint64_t buf; /* IN: GPA */
	uint64_t len; /* IN: <= CLOAK_CONSOLE_MAX */
};

/* Terminate with `status` (0..CLOAK_EXIT_STATUS_MAX). Does not return. */
#define CLOAK_EXIT_STATUS_MAX 239
struct cloak_hc_exit {
	int64_t ret;
	int64_t status;
};

/* Abnormal termination with a message, or a CPU exception trapped by the
 * runtime (vector < 32, otherwise vector = CLOAK_ABORT_NO_VECTOR).
 * Does not return; the monitor exits with CLOAK_EXIT_ABORT. */
#define CLOAK_ABORT_NO_VECTOR 0xffffffffu
#define CLOAK_ABORT_MSG_MAX 512u
struct cloak_hc_abort {
	int64_t ret;
	uint64_t msg;     /* IN: GPA of message, may be 0 */
	uint64_t msg_len; /* IN: <= CLOAK_ABORT_MSG_MAX (longer is cut) */
	uint32_t vector;
	uint32_t pad;
	uint64_t error_code;
	uint64_t rip;
	uint64_t rsp;
	uint64_t cr2;
};

/* Wall-clock time: nanoseconds since the Unix epoch (CLOCK_REALTIME).
 * Monotonic time needs no call: the guest reads the TSC and divides by
 * boot_info.tsc_khz. */
struct cloak_hc_walltime {
	int64_t ret;
	uint64_t epoch_ns; /* OUT */
};

/* Sleep until `timeout_ns` has passed or one of the devices in `wait_set`
 * has an event. OUT ready_set: bits of devices that are ready.
 * Handles of block devices and channels share one 64-bit namespace. */
struct cloak_hc_poll {
	int64_t ret;
	uint64_t timeout_ns; /* IN: relative; 0 = just check */
	uint64_t wait_set;   /* IN */
	uint64_t ready_set;  /* OUT */
};

/* Fill `len` bytes at `buf` with random bytes from the host (getrandom). */
#define CLOAK_RANDOM_MAX 256u
struct cloak_hc_random {
	int64_t ret;
	uint64_t buf;
	uint64_t len; /* <= CLOAK_RANDOM_MAX */
};

/* Turn protection on: from now on the monitor touches only pages the guest
 * shared. Irreversible for the life of the VM. OUT flags: CLOAK_PROT_*
 * describing what the host enforces. */
#define CLOAK_PROT_CHECKED_ACCESS (1ull << 0) /* monitor access checked */
#define CLOAK_PROT_NO_DIRECT_MAP (1ull << 1)  /* RAM out of kernel direct map */
#define CLOAK_PROT_NO_GUP (1ull << 2)         /* RAM refused to GUP */
#define CLOAK_PROT_NO_VMM_MAP (1ull << 3)     /* monitor has no mapping */
struct cloak_hc_protect {
	int64_t ret;
	uint64_t flags; /* OUT */
};

/* SHARE / UNSHARE: page-granular. */
struct cloak_hc_share {
	int64_t ret;
	uint64_t gpa;    /* IN: page aligned */
	uint64_t npages; /* IN: > 0 */
};

/* Block devices: handle is 0 .. CLOAK_BLOCK_MAX-1. */
#define CLOAK_BLOCK_MAX 8u
#define CLOAK_NAME_MAX 32u
struct cloak_hc_block_info {
	int64_t ret;
	char name[CLOAK_NAME_MAX]; /* IN, NUL-terminated */
	uint64_t handle;      /* OUT */
	uint64_t capacity;    /* OUT: bytes */
	uint64_t sector_size; /* OUT */
	uint64_t flags;       /* OUT: CLOAK_BLOCK_RO */
};
#define CLOAK_BLOCK_RO (1ull << 0)

#define CLOAK_BLOCK_READ 0u
#define CLOAK_BLOCK_WRITE 1u
#define CLOAK_BLOCK_FLUSH 2u
#define CLOAK_BLOCK_IO_MAX (1ull << 20) /* bytes per call */
struct cloak_hc_block_io {
	int64_t ret;
	uint64_t handle;
	uint64_t op;     /* CLOAK_BLOCK_READ/WRITE/FLUSH */
	uint64_t offset; /* bytes, sector aligned */
	uint64_t buf;    /* GPA */
	uint64_t len;    /* bytes, sector multiple, <= CLOAK_BLOCK_IO_MAX */
};

/* Channels: byte streams to host Unix sockets. */
#define CLOAK_CHAN_MAX 8u
struct cloak_hc_chan_open {
	int64_t ret;
	char name[CLOAK_NAME_MAX]; /* IN */
	uint64_t handle;           /* OUT (poll bit = CLOAK_CHAN_POLL_BIT(h)) */
};
#define CLOAK_CHAN_POLL_BIT(h) (1ull << (CLOAK_BLOCK_MAX + (h)))
#define CLOAK_CHAN_READ 0u
#define CLOAK_CHAN_WRITE 1u
#define CLOAK_CHAN_HANGUP 2u /* close the current connection; buf and len must be 0 */
#define CLOAK_CHAN_IO_MAX (1ull << 20)
struct cloak_hc_chan_io {
	int64_t ret; /* OUT: bytes moved, or -CLOAK_EAGAIN / -CLOAK_EPIPE */
	uint64_t handle;
	uint64_t op;
	uint64_t buf;
	uint64_t len;
};

/* ------------------------------------------------------------------ */
/* Monitor exit statuses (documented in cloak(1)).                     */
/* Guest exit statuses 0..239 pass through unchanged.                  */
/* ------------------------------------------------------------------ */
#define CLOAK_EXIT_INTERRUPTED 240 /* SIGINT/SIGTERM/SIGHUP, memory wiped */
#define CLOAK_EXIT_INTERNAL 248    /* monitor failure (bug, out of memory) */
#define CLOAK_EXIT_NOHOST 249      /* host lacks KVM or a needed feature */
#define CLOAK_EXIT_BADIMAGE 250    /* guest image rejected */
#define CLOAK_EXIT_USAGE 251       /* bad command line */
#define CLOAK_EXIT_WATCHDOG 252    /* --timeout expired */
#define CLOAK_EXIT_VIOLATION 253   /* guest broke the ABI (bad port, ...) */
#define CLOAK_EXIT_CRASH 254       /* triple fault, KVM internal error */
#define CLOAK_EXIT_ABORT 255       /* guest abort() or CPU exception */

#ifdef __cplusplus
#define CLOAK_ABI_ASSERT(c, m) static_assert(c, m)
#else
#define CLOAK_ABI_ASSERT(c, m) _Static_assert(c, m)
#endif
CLOAK_ABI_ASSERT(sizeof(struct cloak_boot_info) == 56 + 8 * CLOAK_ARGC_MAX, "boot info");
CLOAK_ABI_ASSERT(sizeof(struct cloak_hc_abort) == 64, "abort");
CLOAK_ABI_ASSERT(sizeof(struct cloak_hc_block_info) == 72, "block info");
CLOAK_ABI_ASSERT(sizeof(struct cloak_hc_block_io) == 48, "block io");
CLOAK_ABI_ASSERT(sizeof(struct cloak_hc_chan_open) == 48, "chan open");
CLOAK_ABI_ASSERT(sizeof(struct cloak_hc_chan_io) == 40, "chan io");

#endif

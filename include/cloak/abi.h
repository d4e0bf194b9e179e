/* SPDX-License-Identifier: ISC */
/*
 * cloak guest <-> monitor ABI: the contract both sides compile against.
 *
 * The monitor (hosted, gnu11) and the guest runtime (freestanding) both
 * include this header, so it uses only fixed-width types. Every structure
 * has a fixed layout, pinned below by size and offset assertions, so both
 * compilers agree byte for byte. How the ABI may evolve (what keeps
 * CLOAK_ABI_VERSION and what bumps it) is in docs/abi.md.
 *
 * Calling convention: the guest writes, with a 32-bit `outl`, the
 * guest-physical address of a call's argument block to port
 * CLOAK_HC_PORT_BASE + call number. Argument blocks are 8-byte aligned, lie
 * below 4 GiB and (once protection is enabled) in shared pages. Every block
 * starts with `int64_t ret`, which the monitor fills with 0, a result, or a
 * negative CLOAK_E* code. Fields marked IN are read by the monitor, OUT
 * written by it; the monitor never reads an OUT field.
 *
 * Monitor-only contracts (exit statuses, memory size limits) are not part
 * of this header: they live with the monitor (monitor/exit_status.h).
 */
#ifndef CLOAK_ABI_H
#define CLOAK_ABI_H

#include <stddef.h>
#include <stdint.h>

#define CLOAK_ABI_VERSION 1u

/* ELF note that declares the ABI a guest was built against. */
#define CLOAK_NOTE_NAME "CLOAK" /* namesz 6 including NUL */
#define CLOAK_NOTE_TYPE_ABI 0x434c4b01u
struct cloak_note_abi {
	uint32_t abi_version; /* IN (guest to monitor): CLOAK_ABI_VERSION it was built against */
	uint32_t flags;       /* IN: reserved, 0 */
};

/* ------------------------------------------------------------------ */
/* Guest-physical memory layout.                                       */
/* ------------------------------------------------------------------ */
#define CLOAK_PAGE_SIZE 4096ull
#define CLOAK_PAGE_SHIFT 12
/* [0, 4 KiB) is never mapped: null dereferences fault. */
/* Boot info, the GDT, the TSS and the argv strings follow each other, so
 * that a short command line fits one page with the rest: each page the
 * monitor writes is one more fault into protected memory at every boot. */
#define CLOAK_GPA_BOOTINFO 0x1000ull /* struct cloak_boot_info          */
#define CLOAK_GPA_GDT 0x1240ull      /* GDT, monitor-owned              */
#define CLOAK_GPA_TSS 0x1280ull      /* 64-bit TSS: IST1 for #PF, #DF   */
#define CLOAK_GPA_CMDLINE 0x1300ull  /* argv strings, CLOAK_CMDLINE_MAX */
#define CLOAK_CMDLINE_MAX 0x2000ull
/* Stack for IST1 (selected by the runtime's IDT for #PF and #DF), so that a
 * stack overflow into the guard page is reported rather than fatal. */
#define CLOAK_GPA_IST_STACK_TOP 0x8000ull /* grows down to 0x6000 */
/* The monitor's window: pages that stay shared with the monitor for the
 * life of the VM, whatever the guest shares or not. The guest must keep
 * nothing there. The monitor uses them to end the VM cleanly (for example
 * to have the vCPU wipe memory the monitor no longer maps). */
#define CLOAK_GPA_MONITOR_WINDOW 0x8000ull
#define CLOAK_MONITOR_WINDOW_PAGES 8u
#define CLOAK_GPA_PAGETABLES 0x10000ull /* page tables, monitor-built */
/* Everything below this address is the monitor's reserved area; guest
 * ELF segments must be loaded at or above it. */
#define CLOAK_GPA_GUEST_MIN 0x100000ull
/* Image segments must end at or below this address: the image is mapped
 * with 4 KiB pages (per-segment access, guard pages in holes), and their
 * page tables must fit in the reserved area. */
#define CLOAK_GPA_IMAGE_END_MAX 0x10000000ull /* 256 MiB */

/* Boot information, at CLOAK_GPA_BOOTINFO; its address is also in %rdi at
 * entry. Written by the monitor before the first instruction; every field
 * is OUT (the monitor never reads it back). */
#define CLOAK_BOOT_MAGIC 0x4b4f4f42544f4f42ull /* "BOOTBOOK" */
#define CLOAK_ARGC_MAX 64
struct cloak_boot_info {
	uint64_t magic;          /* OUT: CLOAK_BOOT_MAGIC */
	uint32_t abi_version;    /* OUT: the monitor's CLOAK_ABI_VERSION */
	uint32_t argc;           /* OUT: entries used in argv */
	uint64_t mem_size;       /* OUT: bytes of guest RAM, from GPA 0 */
	uint64_t heap_start;     /* OUT: first free page after the image */
	uint64_t tsc_khz;        /* OUT: guest TSC frequency */
	uint64_t capabilities;   /* OUT: CLOAK_CAP_* the monitor offers */
	uint64_t memory_backend; /* OUT: CLOAK_BACKEND_* */
	uint64_t argv[CLOAK_ARGC_MAX]; /* OUT: GPAs of NUL-terminated strings */
};

/* Where guest RAM comes from (boot info memory_backend). */
#define CLOAK_BACKEND_SHARED 0u /* plain memfd: no protection */
#define CLOAK_BACKEND_SECRET 1u /* memfd_secret */
#define CLOAK_BACKEND_GMEM 2u   /* guest_memfd */

/* Capability bits (boot info capabilities). */
#define CLOAK_CAP_PROTECT (1ull << 0) /* PROTECT, SHARE, UNSHARE */
#define CLOAK_CAP_BLOCK (1ull << 1)   /* at least one block device */
#define CLOAK_CAP_CHANNEL (1ull << 2) /* at least one channel */
/* KVM runs guest code on the CPU (VMX/SVM). Without it KVM emulates guest
 * code, and SSE arithmetic (not SSE moves) ends the guest with an
 * internal error: prebuilt code that has some must not run. */
#define CLOAK_CAP_NATIVE_CPU (1ull << 3)

/* ------------------------------------------------------------------ */
/* Hypercalls.                                                         */
/* ------------------------------------------------------------------ */
#define CLOAK_HC_PORT_BASE 0x500u
#define CLOAK_HC_MAX 32u /* ports base .. base+MAX-1 belong to cloak */
/* An `outl` here exits to the monitor, which does nothing and resumes the
 * guest: the reference a call's overhead is measured against. */
#define CLOAK_PORT_NULL (CLOAK_HC_PORT_BASE + CLOAK_HC_MAX)

/*
 * The one list of calls: X(number, NAME, name, argument struct). It makes
 * enum cloak_hc here and, in the monitor, the handler declarations, the
 * dispatch table and a size check on every argument block.
 */
#define CLOAK_HC_CALLS(X)                                              \
	X(0, NOP, nop, struct cloak_hc_nop)                            \
	X(1, CONSOLE, console, struct cloak_hc_console)                \
	X(2, EXIT, exit, struct cloak_hc_exit)                         \
	X(3, ABORT, abort, struct cloak_hc_abort)                      \
	X(4, WALLTIME, walltime, struct cloak_hc_walltime)             \
	X(5, POLL, poll, struct cloak_hc_poll)                         \
	X(6, RANDOM, random, struct cloak_hc_random)                   \
	X(7, PROTECT, protect, struct cloak_hc_protect)                \
	X(8, SHARE, share, struct cloak_hc_share)                      \
	X(9, UNSHARE, unshare, struct cloak_hc_share)                  \
	X(10, BLOCK_INFO, block_info, struct cloak_hc_block_info)      \
	X(11, BLOCK_IO, block_io, struct cloak_hc_block_io)            \
	X(12, CHAN_OPEN, chan_open, struct cloak_hc_chan_open)         \
	X(13, CHAN_IO, chan_io, struct cloak_hc_chan_io)                \
	X(14, BLOCK_BATCH, block_batch, struct cloak_hc_block_batch)    \
	X(15, CHAN_XFER, chan_xfer, struct cloak_hc_chan_xfer)

enum cloak_hc {
#define CLOAK_HC_ENUM_(nr, NAME, name, type) CLOAK_HC_##NAME = nr,
	CLOAK_HC_CALLS(CLOAK_HC_ENUM_)
#undef CLOAK_HC_ENUM_
};

/*
 * Error codes returned in `ret` (negated): X(value, NAME, text). The
 * guest runtime's cloak_strerror() and docs/abi.md use the same texts.
 */
#define CLOAK_ERRORS(X)                                                              \
	X(1, EINVAL, "malformed argument (alignment, zero count, unknown operation)")  \
	X(2, EFAULT, "buffer outside guest memory or wraps around")                    \
	X(3, EACCES, "buffer touches a page the guest has not shared")                 \
	X(4, ENOSYS, "call not offered by this monitor")                               \
	X(5, ENOENT, "no such device or channel, or not open")                         \
	X(6, EIO, "host I/O error")                                                    \
	X(7, EROFS, "write to a read-only device")                                     \
	X(8, ERANGE, "offset or length beyond the end of a device")                    \
	X(9, EAGAIN, "nothing available now: poll and retry")                          \
	X(10, EPIPE, "the peer closed the channel")                                    \
	X(11, E2BIG, "length larger than the call allows")                             \
	X(13, ETIMEDOUT, "a deadline passed (guest runtime only, never the monitor)")  \
	X(14, EPERM, "page outside the shared window fixed at PROTECT")

enum cloak_error {
#define CLOAK_ERROR_ENUM_(v, NAME, text) CLOAK_##NAME = v,
	CLOAK_ERRORS(CLOAK_ERROR_ENUM_)
#undef CLOAK_ERROR_ENUM_
};

struct cloak_hc_nop {
	int64_t ret; /* OUT: 0 */
};

/* Write `len` bytes at `buf` to the console. */
#define CLOAK_CONSOLE_MAX 4096u
struct cloak_hc_console {
	int64_t ret;  /* OUT: bytes written, or -CLOAK_E* */
	uint64_t buf; /* IN: GPA */
	uint64_t len; /* IN: <= CLOAK_CONSOLE_MAX */
};

/* Terminate with `status`. Does not return. */
#define CLOAK_EXIT_STATUS_MAX 239
struct cloak_hc_exit {
	int64_t ret;    /* OUT: never written (the VM ends) */
	int64_t status; /* IN: 0..CLOAK_EXIT_STATUS_MAX */
};

/* Abnormal termination with a message, or a CPU exception trapped by the
 * runtime (vector < 32, otherwise vector = CLOAK_ABORT_NO_VECTOR).
 * Does not return. */
#define CLOAK_ABORT_NO_VECTOR 0xffffffffu
#define CLOAK_ABORT_MSG_MAX 512u
struct cloak_hc_abort {
	int64_t ret;         /* OUT: never written (the VM ends) */
	uint64_t msg;        /* IN: GPA of the message, may be 0 */
	uint64_t msg_len;    /* IN: <= CLOAK_ABORT_MSG_MAX (longer is cut) */
	uint32_t vector;     /* IN: exception vector or CLOAK_ABORT_NO_VECTOR */
	uint32_t pad;        /* IN: ignored */
	uint64_t error_code; /* IN: the exception's error code */
	uint64_t rip;        /* IN: where it happened */
	uint64_t rsp;        /* IN: the stack pointer then */
	uint64_t cr2;        /* IN: faulting address (#PF) */
};

/* Wall-clock time. Monotonic time needs no call: the guest reads the TSC
 * and divides by boot_info.tsc_khz. */
struct cloak_hc_walltime {
	int64_t ret;       /* OUT: 0 */
	uint64_t epoch_ns; /* OUT: nanoseconds since the Unix epoch */
};

/* Sleep until `timeout_ns` has passed or one of the devices in `wait_set`
 * has an event. Handles of block devices and channels share one 64-bit
 * namespace of poll bits. */
struct cloak_hc_poll {
	int64_t ret;         /* OUT: 0 or -CLOAK_E* */
	uint64_t timeout_ns; /* IN: relative; 0 = just check */
	uint64_t wait_set;   /* IN: poll bits of the devices to wait for */
	uint64_t ready_set;  /* OUT: poll bits of the devices that are ready */
};

/* Fill `len` bytes at `buf` with random bytes from the host (getrandom). */
#define CLOAK_RANDOM_MAX 256u
struct cloak_hc_random {
	int64_t ret;  /* OUT: bytes filled, or -CLOAK_E* */
	uint64_t buf; /* IN: GPA */
	uint64_t len; /* IN: <= CLOAK_RANDOM_MAX */
};

/* Turn protection on: from now on the monitor touches only pages the guest
 * shared. Irreversible for the life of the VM. The flags say what holds on
 * the running host, each verified or enforced by the kernel (docs/abi.md). */
#define CLOAK_PROT_CHECKED_ACCESS (1ull << 0) /* every monitor access checked */
#define CLOAK_PROT_NO_DIRECT_MAP (1ull << 1)  /* RAM out of the kernel direct map */
#define CLOAK_PROT_NO_GUP (1ull << 2)         /* RAM refused to GUP */
#define CLOAK_PROT_NO_VMM_MAP (1ull << 3)     /* the monitor holds no mapping of
						 private pages, nor a way to map them */
#define CLOAK_PROT_DEVICES_APART (1ull << 4)  /* the host-facing code (calls,
						 devices) runs in a process that maps
						 only the shared pages and holds no
						 VM or vCPU descriptor */
struct cloak_hc_protect {
	int64_t ret;    /* OUT: 0 or -CLOAK_E* */
	uint64_t flags; /* OUT: CLOAK_PROT_* */
};

/* SHARE / UNSHARE: page-granular. With CLOAK_PROT_NO_VMM_MAP or
 * CLOAK_PROT_DEVICES_APART, SHARE after PROTECT accepts only pages of the
 * shared window fixed at PROTECT. */
struct cloak_hc_share {
	int64_t ret;     /* OUT: 0 or -CLOAK_E* */
	uint64_t gpa;    /* IN: page aligned */
	uint64_t npages; /* IN: > 0 */
};

/* Block devices: handle is 0 .. CLOAK_BLOCK_MAX-1, poll bit 1 << handle. */
#define CLOAK_BLOCK_MAX 8u
#define CLOAK_NAME_MAX 32u
struct cloak_hc_block_info {
	int64_t ret;               /* OUT: 0 or -CLOAK_E* */
	char name[CLOAK_NAME_MAX]; /* IN: NUL-terminated */
	uint64_t handle;           /* OUT */
	uint64_t capacity;         /* OUT: bytes */
	uint64_t sector_size;      /* OUT: 512 or 4096 */
	uint64_t flags;            /* OUT: CLOAK_BLOCK_RO */
};
#define CLOAK_BLOCK_RO (1ull << 0)

#define CLOAK_BLOCK_READ 0u
#define CLOAK_BLOCK_WRITE 1u
#define CLOAK_BLOCK_FLUSH 2u
#define CLOAK_BLOCK_IO_MAX (1ull << 20) /* bytes per call */
struct cloak_hc_block_io {
	int64_t ret;     /* OUT: 0 or -CLOAK_E* */
	uint64_t handle; /* IN */
	uint64_t op;     /* IN: CLOAK_BLOCK_READ/WRITE/FLUSH */
	uint64_t offset; /* IN: bytes, sector aligned (0 for FLUSH) */
	uint64_t buf;    /* IN: GPA */
	uint64_t len;    /* IN: bytes, sector multiple, <= CLOAK_BLOCK_IO_MAX (0 for FLUSH) */
};

/* BLOCK_BATCH: up to CLOAK_BLOCK_BATCH_MAX requests on one device in one
 * call (one exit), run in array order; each is what a BLOCK_IO of the same
 * op, offset, buf and len would do, and gets its own status. The array
 * lies in guest memory, 8-byte aligned, shared like any buffer; the
 * monitor reads it once before the first request runs and then writes only
 * each request's `ret`. */
#define CLOAK_BLOCK_BATCH_MAX 64u
struct cloak_block_req {
	int64_t ret;     /* OUT: 0 or -CLOAK_E* */
	uint64_t op;     /* IN: CLOAK_BLOCK_READ/WRITE/FLUSH */
	uint64_t offset; /* IN: as in cloak_hc_block_io */
	uint64_t buf;    /* IN: GPA */
	uint64_t len;    /* IN */
};
struct cloak_hc_block_batch {
	int64_t ret;     /* OUT: requests that failed (0: all done), or -CLOAK_E*
			    when the batch is refused and no request ran */
	uint64_t handle; /* IN */
	uint64_t reqs;   /* IN: GPA of count struct cloak_block_req */
	uint64_t count;  /* IN: 1 .. CLOAK_BLOCK_BATCH_MAX */
};

/* Channels: byte streams to host Unix sockets. */
#define CLOAK_CHAN_MAX 8u
struct cloak_hc_chan_open {
	int64_t ret;               /* OUT: 0 or -CLOAK_E* */
	char name[CLOAK_NAME_MAX]; /* IN: NUL-terminated */
	uint64_t handle;           /* OUT: poll bit CLOAK_CHAN_POLL_BIT(handle) */
};
#define CLOAK_CHAN_POLL_BIT(h) (1ull << (CLOAK_BLOCK_MAX + (h)))
#define CLOAK_CHAN_READ 0u
#define CLOAK_CHAN_WRITE 1u
#define CLOAK_CHAN_HANGUP 2u /* close the current connection; buf and len must be 0 */
#define CLOAK_CHAN_IO_MAX (1ull << 20)
struct cloak_hc_chan_io {
	int64_t ret;     /* OUT: bytes moved, or -CLOAK_E* */
	uint64_t handle; /* IN */
	uint64_t op;     /* IN: CLOAK_CHAN_READ/WRITE/HANGUP */
	uint64_t buf;    /* IN: GPA */
	uint64_t len;    /* IN: <= CLOAK_CHAN_IO_MAX */
};

/* A request-reply service's turn in one call: write all of out (a reply),
 * then read what comes into in (the next request), waiting up to
 * timeout_ns for it; CHAN_IO's WRITE, POLL and READ would be three calls.
 * ret: bytes read (> 0); -CLOAK_EAGAIN when the write did not go out
 * whole (written says how much did: the rest goes by CHAN_IO) or when
 * nothing came to read in time; -CLOAK_E* as CHAN_IO otherwise. Both
 * ranges are checked before anything moves. */
struct cloak_hc_chan_xfer {
	int64_t ret;         /* OUT: bytes read, or -CLOAK_E* */
	uint64_t handle;     /* IN */
	uint64_t timeout_ns; /* IN: the longest wait for bytes to read; 0: none */
	uint64_t out;        /* IN: GPA of the bytes to write */
	uint64_t out_len;    /* IN: <= CLOAK_CHAN_IO_MAX; 0: nothing to write */
	uint64_t in;         /* IN: GPA of the room for bytes read */
	uint64_t in_len;     /* IN: 1 .. CLOAK_CHAN_IO_MAX */
	uint64_t written;    /* OUT: bytes of out written */
};

/* ------------------------------------------------------------------ */
/* Layout pins: a change here is an ABI change (docs/abi.md).          */
/* ------------------------------------------------------------------ */
#ifdef __cplusplus
#define CLOAK_ABI_ASSERT(c, m) static_assert(c, m)
#else
#define CLOAK_ABI_ASSERT(c, m) _Static_assert(c, m)
#endif
#define CLOAK_ABI_AT_(type, field, off) \
	CLOAK_ABI_ASSERT(offsetof(type, field) == (off), #type "." #field)

CLOAK_ABI_ASSERT(sizeof(struct cloak_note_abi) == 8, "note");
CLOAK_ABI_AT_(struct cloak_note_abi, flags, 4);
CLOAK_ABI_ASSERT(sizeof(struct cloak_boot_info) == 56 + 8 * CLOAK_ARGC_MAX, "boot info");
CLOAK_ABI_AT_(struct cloak_boot_info, abi_version, 8);
CLOAK_ABI_AT_(struct cloak_boot_info, argc, 12);
CLOAK_ABI_AT_(struct cloak_boot_info, mem_size, 16);
CLOAK_ABI_AT_(struct cloak_boot_info, heap_start, 24);
CLOAK_ABI_AT_(struct cloak_boot_info, tsc_khz, 32);
CLOAK_ABI_AT_(struct cloak_boot_info, capabilities, 40);
CLOAK_ABI_AT_(struct cloak_boot_info, memory_backend, 48);
CLOAK_ABI_AT_(struct cloak_boot_info, argv, 56);
CLOAK_ABI_ASSERT(sizeof(struct cloak_hc_nop) == 8, "nop");
CLOAK_ABI_ASSERT(sizeof(struct cloak_hc_console) == 24, "console");
CLOAK_ABI_AT_(struct cloak_hc_console, buf, 8);
CLOAK_ABI_AT_(struct cloak_hc_console, len, 16);
CLOAK_ABI_ASSERT(sizeof(struct cloak_hc_exit) == 16, "exit");
CLOAK_ABI_AT_(struct cloak_hc_exit, status, 8);
CLOAK_ABI_ASSERT(sizeof(struct cloak_hc_abort) == 64, "abort");
CLOAK_ABI_AT_(struct cloak_hc_abort, msg, 8);
CLOAK_ABI_AT_(struct cloak_hc_abort, msg_len, 16);
CLOAK_ABI_AT_(struct cloak_hc_abort, vector, 24);
CLOAK_ABI_AT_(struct cloak_hc_abort, pad, 28);
CLOAK_ABI_AT_(struct cloak_hc_abort, error_code, 32);
CLOAK_ABI_AT_(struct cloak_hc_abort, rip, 40);
CLOAK_ABI_AT_(struct cloak_hc_abort, rsp, 48);
CLOAK_ABI_AT_(struct cloak_hc_abort, cr2, 56);
CLOAK_ABI_ASSERT(sizeof(struct cloak_hc_walltime) == 16, "walltime");
CLOAK_ABI_AT_(struct cloak_hc_walltime, epoch_ns, 8);
CLOAK_ABI_ASSERT(sizeof(struct cloak_hc_poll) == 32, "poll");
CLOAK_ABI_AT_(struct cloak_hc_poll, timeout_ns, 8);
CLOAK_ABI_AT_(struct cloak_hc_poll, wait_set, 16);
CLOAK_ABI_AT_(struct cloak_hc_poll, ready_set, 24);
CLOAK_ABI_ASSERT(sizeof(struct cloak_hc_random) == 24, "random");
CLOAK_ABI_AT_(struct cloak_hc_random, buf, 8);
CLOAK_ABI_AT_(struct cloak_hc_random, len, 16);
CLOAK_ABI_ASSERT(sizeof(struct cloak_hc_protect) == 16, "protect");
CLOAK_ABI_AT_(struct cloak_hc_protect, flags, 8);
CLOAK_ABI_ASSERT(sizeof(struct cloak_hc_share) == 24, "share");
CLOAK_ABI_AT_(struct cloak_hc_share, gpa, 8);
CLOAK_ABI_AT_(struct cloak_hc_share, npages, 16);
CLOAK_ABI_ASSERT(sizeof(struct cloak_hc_block_info) == 72, "block info");
CLOAK_ABI_AT_(struct cloak_hc_block_info, name, 8);
CLOAK_ABI_AT_(struct cloak_hc_block_info, handle, 40);
CLOAK_ABI_AT_(struct cloak_hc_block_info, capacity, 48);
CLOAK_ABI_AT_(struct cloak_hc_block_info, sector_size, 56);
CLOAK_ABI_AT_(struct cloak_hc_block_info, flags, 64);
CLOAK_ABI_ASSERT(sizeof(struct cloak_hc_block_io) == 48, "block io");
CLOAK_ABI_AT_(struct cloak_hc_block_io, handle, 8);
CLOAK_ABI_AT_(struct cloak_hc_block_io, op, 16);
CLOAK_ABI_AT_(struct cloak_hc_block_io, offset, 24);
CLOAK_ABI_AT_(struct cloak_hc_block_io, buf, 32);
CLOAK_ABI_AT_(struct cloak_hc_block_io, len, 40);
CLOAK_ABI_ASSERT(sizeof(struct cloak_block_req) == 40, "block req");
CLOAK_ABI_AT_(struct cloak_block_req, op, 8);
CLOAK_ABI_AT_(struct cloak_block_req, offset, 16);
CLOAK_ABI_AT_(struct cloak_block_req, buf, 24);
CLOAK_ABI_AT_(struct cloak_block_req, len, 32);
CLOAK_ABI_ASSERT(sizeof(struct cloak_hc_block_batch) == 32, "block batch");
CLOAK_ABI_AT_(struct cloak_hc_block_batch, handle, 8);
CLOAK_ABI_AT_(struct cloak_hc_block_batch, reqs, 16);
CLOAK_ABI_AT_(struct cloak_hc_block_batch, count, 24);
CLOAK_ABI_ASSERT(sizeof(struct cloak_hc_chan_open) == 48, "chan open");
CLOAK_ABI_AT_(struct cloak_hc_chan_open, name, 8);
CLOAK_ABI_AT_(struct cloak_hc_chan_open, handle, 40);
CLOAK_ABI_ASSERT(sizeof(struct cloak_hc_chan_io) == 40, "chan io");
CLOAK_ABI_AT_(struct cloak_hc_chan_io, handle, 8);
CLOAK_ABI_AT_(struct cloak_hc_chan_io, op, 16);
CLOAK_ABI_AT_(struct cloak_hc_chan_io, buf, 24);
CLOAK_ABI_AT_(struct cloak_hc_chan_io, len, 32);
CLOAK_ABI_ASSERT(sizeof(struct cloak_hc_chan_xfer) == 64, "chan xfer");
CLOAK_ABI_AT_(struct cloak_hc_chan_xfer, handle, 8);
CLOAK_ABI_AT_(struct cloak_hc_chan_xfer, timeout_ns, 16);
CLOAK_ABI_AT_(struct cloak_hc_chan_xfer, out, 24);
CLOAK_ABI_AT_(struct cloak_hc_chan_xfer, out_len, 32);
CLOAK_ABI_AT_(struct cloak_hc_chan_xfer, in, 40);
CLOAK_ABI_AT_(struct cloak_hc_chan_xfer, in_len, 48);
CLOAK_ABI_AT_(struct cloak_hc_chan_xfer, written, 56);
CLOAK_ABI_ASSERT(CLOAK_BLOCK_MAX + CLOAK_CHAN_MAX <= 64, "poll bits fit one word");
CLOAK_ABI_ASSERT(CLOAK_GPA_MONITOR_WINDOW + CLOAK_MONITOR_WINDOW_PAGES * CLOAK_PAGE_SIZE <=
			 CLOAK_GPA_PAGETABLES, "monitor window in the reserved area");
CLOAK_ABI_ASSERT(CLOAK_GPA_BOOTINFO + sizeof(struct cloak_boot_info) <= CLOAK_GPA_GDT,
		 "GDT after the boot info");
CLOAK_ABI_ASSERT(CLOAK_GPA_GDT + 5 * 8 <= CLOAK_GPA_TSS, "GDT (5 entries) before the TSS");
CLOAK_ABI_ASSERT(CLOAK_GPA_TSS + 0x68 <= CLOAK_GPA_CMDLINE, "TSS before the argv strings");
CLOAK_ABI_ASSERT(CLOAK_GPA_CMDLINE + CLOAK_CMDLINE_MAX <= CLOAK_GPA_IST_STACK_TOP - 0x2000,
		 "argv strings below the IST1 stack");

#endif

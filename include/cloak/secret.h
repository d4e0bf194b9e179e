/* SPDX-License-Identifier: ISC */
/*
 * libcloak: secret memory for host processes.
 *
 * Allocations live in memfd_secret(2) memory: pages that are removed from the
 * kernel's direct map, locked, left out of core dumps and never shared with
 * children. Small secrets are pooled inside secret arenas (16 KiB to 2 MiB,
 * sized to the lock limit), so a 32-byte key costs a 48-byte slot instead of a
 * page. Every name here starts with cloak_secret_ or CLOAK_SECRET_, so this
 * header can be included together with <cloak/abi.h>. See libcloak(3).
 */
#ifndef CLOAK_SECRET_H
#define CLOAK_SECRET_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* libcloak is built with hidden visibility; only this API is exported. */
#pragma GCC visibility push(default)

/* Returns zeroed secret memory aligned to 16 bytes, or NULL with errno set
 * (ENOMEM; cloak_secret_last_error() then says why, e.g. RLIMIT_MEMLOCK). */
void *cloak_secret_alloc(size_t size);
void *cloak_secret_calloc(size_t count, size_t size);
/* Like realloc(3). A guarded secret stays guarded and keeps its protection
 * mode (a NOACCESS secret can be resized without making it readable first). */
void *cloak_secret_realloc(void *ptr, size_t size);
/* Zeroes the secret, checks its canaries and frees it; aborts with a message
 * naming the problem on overflow, underflow, double free or a foreign pointer. */
void cloak_secret_free(void *ptr);
/* The size the secret was allocated with: the bytes the caller may use (a
 * canary follows them). 0 for NULL. */
size_t cloak_secret_usable_size(const void *ptr);

/* A secret on its own pages between two guard pages, its end at the end of a
 * page so a one-byte overflow faults at once. Like sodium_malloc, the pointer
 * is aligned only as far as `size` is a multiple of 16. */
void *cloak_secret_alloc_guarded(size_t size);

#define CLOAK_SECRET_NOACCESS 0
#define CLOAK_SECRET_READONLY 1
#define CLOAK_SECRET_READWRITE 2
/* Changes the access to a guarded allocation (or any allocation in guard-all
 * debug mode). 0 on success; -1 with errno EINVAL for pooled secrets, which
 * share their page with others. */
int cloak_secret_protect(void *ptr, int mode);

/* Policies for hosts without memfd_secret (the CLOAK_FALLBACK environment
 * variable: "mlock" accepts the fallback, "none" refuses it). */
#define CLOAK_SECRET_POLICY_SECRETMEM_ONLY 0      /* default: fail with ENOMEM */
#define CLOAK_SECRET_POLICY_ALLOW_MLOCK_FALLBACK 1 /* mlock + MADV_DONTDUMP + MADV_DONTFORK */
int cloak_secret_set_policy(int policy);

/* What a child made by fork() gets (the CLOAK_FORK environment variable:
 * "drop" or "copy"). Either way the child never shares a page with its
 * parent. See cloak_secret_set_fork(3). */
#define CLOAK_SECRET_FORK_DROP 0 /* default of libcloak.so: the child has none of
                                  * the parent's secrets; their addresses stay
                                  * reserved and fault */
#define CLOAK_SECRET_FORK_COPY 1 /* default of the preloads: the child gets its own
                                  * copy of every secret, in fresh secret memory,
                                  * at the same address, before fork() returns */
int cloak_secret_set_fork(int mode);

/* Debug flags (environment: CLOAK_DEBUG=guard). */
#define CLOAK_SECRET_DEBUG_GUARD_ALL 1 /* every allocation gets its own guarded pages */
int cloak_secret_set_debug(int flags);

/* One line explaining the calling thread's last allocation failure, or "". */
const char *cloak_secret_last_error(void);

/* Backends. */
#define CLOAK_SECRET_BACKEND_NONE 0      /* nothing usable: allocations fail */
#define CLOAK_SECRET_BACKEND_SECRETMEM 1 /* memfd_secret */
#define CLOAK_SECRET_BACKEND_MLOCK 2     /* the accepted fallback */

/* Protection bits in cloak_secret_info.protections. */
#define CLOAK_SECRET_PROT_NO_DIRECT_MAP 0x01 /* pages removed from the kernel direct map */
#define CLOAK_SECRET_PROT_LOCKED 0x02        /* never swapped */
#define CLOAK_SECRET_PROT_NO_DUMP 0x04       /* left out of core dumps */
#define CLOAK_SECRET_PROT_NO_FORK 0x08       /* children never share the pages */
#define CLOAK_SECRET_PROT_NO_PEEK 0x10       /* process_vm_readv, /proc/pid/mem, ptrace refused */
#define CLOAK_SECRET_PROT_CANARIES 0x20      /* overflow/underflow/double free checked on free */
#define CLOAK_SECRET_PROT_ZERO_ON_FREE 0x40
#define CLOAK_SECRET_PROT_GUARD_ALL 0x80     /* debug mode: every allocation guarded */

struct cloak_secret_info {
	int backend;               /* CLOAK_SECRET_BACKEND_* */
	unsigned protections;      /* CLOAK_SECRET_PROT_* in force for new allocations */
	int policy;                /* CLOAK_SECRET_POLICY_* */
	int debug;                 /* CLOAK_SECRET_DEBUG_* */
	int fork_mode;             /* CLOAK_SECRET_FORK_* */
	int cap_ipc_lock;          /* 1: the kernel ignores the limit for us */
	uint64_t memlock_soft;     /* RLIMIT_MEMLOCK in bytes, UINT64_MAX = unlimited */
	uint64_t memlock_hard;
	size_t arena_size;         /* the largest arena libcloak maps under this limit */
	size_t pooled_max;         /* larger requests get their own guarded mapping */
	/* 1 while this process holds a memfd_secret file, which makes the kernel
	 * refuse to hibernate the machine. libcloak gives every file back once no
	 * secret is live, so this is 0 whenever every secret has been freed. */
	int blocks_hibernation;
	unsigned secretmem_files;  /* memfd_secret files held now */
};
int cloak_secret_info(struct cloak_secret_info *out);
/* The backend's name: "memfd_secret", "mlock-fallback" or "none". */
const char *cloak_secret_backend_name(int backend);

struct cloak_secret_stats {
	uint64_t secrets_in_use;      /* live allocations */
	uint64_t bytes_in_use;        /* bytes requested by live allocations */
	uint64_t allocs, frees;       /* since start */
	uint64_t arenas;              /* pooled arenas mapped */
	uint64_t mapped_allocs;       /* live guarded/large allocations */
	uint64_t cached_mappings;     /* freed guarded/large mappings kept for reuse */
	uint64_t locked_bytes;        /* secret memory held: arenas + guarded mappings */
	uint64_t mappings;            /* VMAs holding secret memory */
	uint64_t releases;            /* times every secret was freed and all memory returned */
	int64_t direct_map_splits;    /* host-wide splits since this process started, -1 if unknown */
};
int cloak_secret_stats(struct cloak_secret_stats *out);
/* Writes the statistics as text to the file descriptor (CLOAK_STATS=1 does
 * this on stderr at exit). */
void cloak_secret_stats_print(int fd);

/*
 * Names of libcloak 0.1 before every name got the cloak_secret_ prefix,
 * kept as deprecated aliases (a compiler warning names the new one) until
 * libcloak 1.0 at the earliest; see "API stability" in docs/libcloak.md.
 * CLOAK_PROT_NO_DIRECT_MAP is not among them: <cloak/abi.h> gives that name
 * another value. Enumerators, not macros, so that nothing here can replace
 * a name in another header.
 */
#if defined(__GNUC__) || defined(__clang__)
#define CLOAK_SECRET_RENAMED(old_name, new_name) \
	old_name __attribute__((deprecated("use " #new_name))) = new_name
#else
#define CLOAK_SECRET_RENAMED(old_name, new_name) old_name = new_name
#endif
enum cloak_secret_deprecated_names {
	CLOAK_SECRET_RENAMED(CLOAK_NOACCESS, CLOAK_SECRET_NOACCESS),
	CLOAK_SECRET_RENAMED(CLOAK_READONLY, CLOAK_SECRET_READONLY),
	CLOAK_SECRET_RENAMED(CLOAK_READWRITE, CLOAK_SECRET_READWRITE),
	CLOAK_SECRET_RENAMED(CLOAK_POLICY_SECRETMEM_ONLY, CLOAK_SECRET_POLICY_SECRETMEM_ONLY),
	CLOAK_SECRET_RENAMED(CLOAK_POLICY_ALLOW_MLOCK_FALLBACK, CLOAK_SECRET_POLICY_ALLOW_MLOCK_FALLBACK),
	CLOAK_SECRET_RENAMED(CLOAK_DEBUG_GUARD_ALL, CLOAK_SECRET_DEBUG_GUARD_ALL),
	CLOAK_SECRET_RENAMED(CLOAK_BACKEND_NONE, CLOAK_SECRET_BACKEND_NONE),
	CLOAK_SECRET_RENAMED(CLOAK_BACKEND_SECRETMEM, CLOAK_SECRET_BACKEND_SECRETMEM),
	CLOAK_SECRET_RENAMED(CLOAK_BACKEND_MLOCK, CLOAK_SECRET_BACKEND_MLOCK),
	CLOAK_SECRET_RENAMED(CLOAK_PROT_LOCKED, CLOAK_SECRET_PROT_LOCKED),
	CLOAK_SECRET_RENAMED(CLOAK_PROT_NO_DUMP, CLOAK_SECRET_PROT_NO_DUMP),
	CLOAK_SECRET_RENAMED(CLOAK_PROT_NO_FORK, CLOAK_SECRET_PROT_NO_FORK),
	CLOAK_SECRET_RENAMED(CLOAK_PROT_NO_PEEK, CLOAK_SECRET_PROT_NO_PEEK),
	CLOAK_SECRET_RENAMED(CLOAK_PROT_CANARIES, CLOAK_SECRET_PROT_CANARIES),
	CLOAK_SECRET_RENAMED(CLOAK_PROT_ZERO_ON_FREE, CLOAK_SECRET_PROT_ZERO_ON_FREE),
	CLOAK_SECRET_RENAMED(CLOAK_PROT_GUARD_ALL, CLOAK_SECRET_PROT_GUARD_ALL)
};

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif

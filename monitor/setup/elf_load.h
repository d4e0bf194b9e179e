/* SPDX-License-Identifier: ISC */
/*
 * ELF64 x86-64 guest loader.
 *
 * The guest image is hostile input: every header field is validated with
 * overflow-checked arithmetic before a single byte reaches guest memory, and
 * guest memory is written only through gm_copy_to()/gm_zero(). A rejected
 * image leaves guest memory untouched.
 *
 * Accepted images: ELFCLASS64, little-endian, EV_CURRENT, ET_EXEC, EM_X86_64,
 * statically linked (no PT_INTERP, no PT_DYNAMIC), with a PT_NOTE carrying
 * the CLOAK ABI note (include/cloak/abi.h) of this monitor's ABI version.
 * PT_LOAD segments must lie in [CLOAK_GPA_GUEST_MIN, gm_size(gm)), not
 * overlap, not be writable and executable at once (nor share a page with a
 * segment such that the page would need to be both), and the entry point
 * must lie in the file-backed part of an executable segment. Guest memory is
 * identity mapped, so p_paddr must equal p_vaddr.
 */
#ifndef CLOAK_ELF_LOAD_H
#define CLOAK_ELF_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fail.h"
#include "mem/guestmem.h"

/* More program headers than this is not a cloak guest (its runtime links
 * fewer than ten); the cap bounds the work a hostile header can ask for. */
#define ELF_LOAD_MAX_PHDRS 64

/* A loaded segment's pages and access, for the page tables. */
struct elf_segment {
	uint64_t start, end; /* page aligned: [page_down(vaddr), page_up(vaddr+memsz)) */
	bool write, exec;
};

struct elf_image {
	uint64_t entry;       /* validated entry point */
	uint64_t lowest;      /* lowest loaded address, page aligned down */
	uint64_t highest;     /* end of the highest segment (memsz), page aligned up: first free page */
	uint32_t abi_version; /* from the CLOAK ABI note */
	unsigned nseg;        /* PT_LOAD segments with memory, in file order */
	struct elf_segment seg[ELF_LOAD_MAX_PHDRS];
};

/*
 * Validates the ELF image file[0..len) and loads its PT_LOAD segments into
 * guest memory: p_filesz bytes copied, then (p_memsz - p_filesz) bytes
 * explicitly zeroed (the runtime relies on a zero BSS and does not clear it).
 * Returns 0 and fills *out, or -1 with a one-line reason in *f saying what
 * is wrong and what to do (CLOAK_EXIT_BADIMAGE). The reason does not name
 * the file: the caller prefixes it (fail_prefix).
 */
int elf_load(struct guestmem *gm, const void *file, size_t len, struct elf_image *out,
	     struct fail *f);

/* The same validation for a guest memory of mem_size bytes, writing
 * nothing: lets the monitor reject a bad image before it touches KVM. */
int elf_check(uint64_t mem_size, const void *file, size_t len, struct elf_image *out,
	      struct fail *f);

#endif

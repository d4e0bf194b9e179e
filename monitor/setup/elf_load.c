/* SPDX-License-Identifier: ISC */
/* ELF64 x86-64 guest loader; see elf_load.h. */
#include "elf_load.h"

#include <elf.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cloak/abi.h"

/* One validated PT_LOAD segment, in guest-physical terms. */
struct load_seg {
	unsigned index;    /* program header index, for messages */
	uint64_t start;    /* p_vaddr (== p_paddr) */
	uint64_t end;      /* start + p_memsz, never wraps */
	uint64_t offset;   /* p_offset */
	uint64_t filesz;   /* p_filesz <= p_memsz, [offset, offset+filesz) in the file */
	uint32_t flags;    /* PF_* */
};

/* State of one elf_load() call: the file, what has been validated, and
 * where to report. Program headers are copied out of the file because the
 * file buffer need not be aligned for Elf64_Phdr. */
struct loader {
	const uint8_t *file;
	size_t len;
	uint64_t mem_size;
	struct fail *f;
	Elf64_Ehdr eh;
	Elf64_Phdr ph[ELF_LOAD_MAX_PHDRS];
	unsigned phnum;
	struct load_seg seg[ELF_LOAD_MAX_PHDRS];
	unsigned nseg;
	bool have_note;
	uint32_t abi_version;
};

__attribute__((format(printf, 2, 3)))
static int fail(struct loader *l, const char *fmt, ...)
{
	char msg[sizeof l->f->msg];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return fail_set(l->f, CLOAK_EXIT_BADIMAGE, "%s", msg);
}

/* "64 MiB", "1 GiB", "12 KiB" or "1234 bytes": sizes as --mem takes them. */
static const char *human_size(uint64_t bytes, char *buf, size_t buflen)
{
	static const char *const units[] = { "GiB", "MiB", "KiB" };
	for (unsigned i = 0; i < 3; i++) {
		unsigned shift = 30 - 10 * i;
		if (bytes && bytes % (1ull << shift) == 0) {
			snprintf(buf, buflen, "%" PRIu64 " %s", bytes >> shift, units[i]);
			return buf;
		}
	}
	snprintf(buf, buflen, "%" PRIu64 " bytes", bytes);
	return buf;
}

static uint64_t page_down(uint64_t a)
{
	return a & ~(CLOAK_PAGE_SIZE - 1);
}

/* Only called on addresses <= guest memory size, so it cannot wrap. */
static uint64_t page_up(uint64_t a)
{
	return page_down(a + CLOAK_PAGE_SIZE - 1);
}

static int check_header(struct loader *l)
{
	if (l->len < sizeof(Elf64_Ehdr))
		return fail(l, "file is %zu bytes, too short for an ELF64 header (%zu bytes): "
			    "not a guest executable; pass an ELF linked against the cloak runtime",
			    l->len, sizeof(Elf64_Ehdr));
	memcpy(&l->eh, l->file, sizeof(l->eh));
	const Elf64_Ehdr *eh = &l->eh;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
		return fail(l, "not an ELF file (bad magic): pass a guest executable linked "
			    "against the cloak runtime");
	if (eh->e_ident[EI_CLASS] != ELFCLASS64)
		return fail(l, "ELF class %u is not ELFCLASS64: cloak runs 64-bit x86-64 guests only; "
			    "build the guest for x86-64", eh->e_ident[EI_CLASS]);
	if (eh->e_ident[EI_DATA] != ELFDATA2LSB)
		return fail(l, "ELF data encoding %u is not little-endian (ELFDATA2LSB): "
			    "build the guest for x86-64", eh->e_ident[EI_DATA]);
	if (eh->e_ident[EI_VERSION] != EV_CURRENT || eh->e_version != EV_CURRENT)
		return fail(l, "ELF version %u/%u is not EV_CURRENT (1): the file is corrupt",
			    eh->e_ident[EI_VERSION], eh->e_version);
	if (eh->e_type == ET_DYN)
		return fail(l, "position-independent executable (ET_DYN) refused: "
			    "link the guest with -static -no-pie against the cloak runtime");
	if (eh->e_type != ET_EXEC)
		return fail(l, "ELF type %u is not an executable (ET_EXEC): link the guest as a "
			    "static executable (-static -no-pie)", eh->e_type);
	if (eh->e_machine != EM_X86_64)
		return fail(l, "ELF machine %u is not x86-64 (EM_X86_64 = %u): build the guest for x86-64",
			    eh->e_machine, EM_X86_64);
	if (eh->e_ehsize != sizeof(Elf64_Ehdr))
		return fail(l, "ELF header size %u is not %zu: the file is corrupt", eh->e_ehsize,
			    sizeof(Elf64_Ehdr));
	return 0;
}

static int read_phdrs(struct loader *l)
{
	const Elf64_Ehdr *eh = &l->eh;
	if (eh->e_phnum == 0)
		return fail(l, "no program headers: not a loadable executable; link the guest "
			    "against the cloak runtime");
	if (eh->e_phnum > ELF_LOAD_MAX_PHDRS)
		return fail(l, "too many program headers (%u, at most %u): the file is corrupt "
			    "or not a cloak guest", eh->e_phnum, ELF_LOAD_MAX_PHDRS);
	if (eh->e_phentsize != sizeof(Elf64_Phdr))
		return fail(l, "program header size %u is not %zu (Elf64_Phdr): the file is corrupt",
			    eh->e_phentsize, sizeof(Elf64_Phdr));
	uint64_t table_size = (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr); /* <= 64 * 56 */
	uint64_t table_end;
	if (__builtin_add_overflow(eh->e_phoff, table_size, &table_end) || table_end > l->len)
		return fail(l, "program header table [0x%" PRIx64 ", +0x%" PRIx64 ") lies outside "
			    "the %zu-byte file: the file is truncated or corrupt",
			    eh->e_phoff, table_size, l->len);
	memcpy(l->ph, l->file + eh->e_phoff, table_size);
	l->phnum = eh->e_phnum;
	return 0;
}

static bool is_cloak_abi_note(const Elf64_Nhdr *nh, const uint8_t *name)
{
	return nh->n_type == CLOAK_NOTE_TYPE_ABI && nh->n_namesz == sizeof(CLOAK_NOTE_NAME) &&
	       memcmp(name, CLOAK_NOTE_NAME, sizeof(CLOAK_NOTE_NAME)) == 0;
}

/* Walks the notes of PT_NOTE header i. Each note is a 12-byte header, the
 * name and the descriptor, padded to the segment's alignment (4, or 8 for
 * 8-aligned note segments); all of it must lie inside the segment's file
 * range, which must lie inside the file. */
static int scan_notes(struct loader *l, unsigned i)
{
	const Elf64_Phdr *p = &l->ph[i];
	uint64_t end;
	if (__builtin_add_overflow(p->p_offset, p->p_filesz, &end) || end > l->len)
		return fail(l, "note segment %u [offset 0x%" PRIx64 ", +0x%" PRIx64 ") lies outside "
			    "the %zu-byte file: the file is truncated or corrupt",
			    i, p->p_offset, p->p_filesz, l->len);
	uint64_t align = p->p_align == 8 ? 8 : 4;
	uint64_t pos = p->p_offset;
	while (pos < end) {
		Elf64_Nhdr nh;
		if (end - pos < sizeof(nh))
			return fail(l, "note segment %u: truncated note header at file offset 0x%" PRIx64
				    ": the file is corrupt", i, pos);
		memcpy(&nh, l->file + pos, sizeof(nh));
		/* As binutils and Linux do: the descriptor starts at the note
		 * header plus name rounded up to the alignment, the next note
		 * after the descriptor rounded up. pos + 12 <= end (checked
		 * above) and the 32-bit sizes cannot overflow these 64-bit
		 * offsets, but the sums with pos are checked anyway. The name
		 * lies before the descriptor, so desc_end <= end bounds both. */
		uint64_t name_off = pos + sizeof(nh);
		uint64_t desc_rel = (sizeof(nh) + (uint64_t)nh.n_namesz + align - 1) & ~(align - 1);
		uint64_t desc_padded = ((uint64_t)nh.n_descsz + align - 1) & ~(align - 1);
		uint64_t desc_off, desc_end, next;
		if (__builtin_add_overflow(pos, desc_rel, &desc_off) ||
		    __builtin_add_overflow(desc_off, (uint64_t)nh.n_descsz, &desc_end) ||
		    __builtin_add_overflow(desc_off, desc_padded, &next) || desc_end > end)
			return fail(l, "note segment %u: note at file offset 0x%" PRIx64 " (name %u bytes, "
				    "descriptor %u bytes) runs past the end of the segment: the file is corrupt",
				    i, pos, nh.n_namesz, nh.n_descsz);
		if (is_cloak_abi_note(&nh, l->file + name_off)) {
			struct cloak_note_abi abi;
			if (nh.n_descsz != sizeof(abi))
				return fail(l, "the CLOAK ABI note has a %u-byte descriptor, expected %zu: "
					    "rebuild the guest against this cloak runtime",
					    nh.n_descsz, sizeof(abi));
			if (l->have_note)
				return fail(l, "two CLOAK ABI notes: link the guest against one cloak runtime");
			memcpy(&abi, l->file + desc_off, sizeof(abi));
			l->have_note = true;
			l->abi_version = abi.abi_version;
		}
		pos = next;
	}
	return 0;
}

static int check_abi_note(struct loader *l)
{
	for (unsigned i = 0; i < l->phnum; i++)
		if (l->ph[i].p_type == PT_NOTE && scan_notes(l, i) != 0)
			return -1;
	if (!l->have_note)
		return fail(l, "not a cloak guest (no CLOAK ABI note): link it against the cloak runtime");
	if (l->abi_version != CLOAK_ABI_VERSION)
		return fail(l, "guest built for cloak ABI version %u, this monitor speaks version %u: "
			    "rebuild the guest against this cloak runtime",
			    l->abi_version, CLOAK_ABI_VERSION);
	return 0;
}

static int check_static(struct loader *l)
{
	for (unsigned i = 0; i < l->phnum; i++) {
		if (l->ph[i].p_type == PT_INTERP)
			return fail(l, "dynamically linked executable (PT_INTERP in program header %u) "
				    "refused: link the guest with -static -no-pie", i);
		if (l->ph[i].p_type == PT_DYNAMIC)
			return fail(l, "dynamically linked executable (PT_DYNAMIC in program header %u) "
				    "refused: link the guest with -static -no-pie", i);
	}
	return 0;
}

/* Validates PT_LOAD header i on its own; records it unless it is empty. */
static int check_load(struct loader *l, unsigned i)
{
	const Elf64_Phdr *p = &l->ph[i];
	uint64_t file_end, end;
	char size[32];
	if (p->p_filesz > p->p_memsz)
		return fail(l, "segment %u: file size 0x%" PRIx64 " exceeds memory size 0x%" PRIx64
			    ": the file is corrupt", i, p->p_filesz, p->p_memsz);
	if (__builtin_add_overflow(p->p_offset, p->p_filesz, &file_end) || file_end > l->len)
		return fail(l, "segment %u: file range [offset 0x%" PRIx64 ", +0x%" PRIx64 ") lies "
			    "outside the %zu-byte file: the file is truncated or corrupt",
			    i, p->p_offset, p->p_filesz, l->len);
	if (p->p_align & (p->p_align - 1))
		return fail(l, "segment %u: alignment 0x%" PRIx64 " is not a power of two: "
			    "the file is corrupt", i, p->p_align);
	if (__builtin_add_overflow(p->p_vaddr, p->p_memsz, &end))
		return fail(l, "segment %u: address 0x%" PRIx64 " + size 0x%" PRIx64 " wraps around "
			    "the address space: the file is corrupt", i, p->p_vaddr, p->p_memsz);
	if (p->p_vaddr != p->p_paddr)
		return fail(l, "segment %u: virtual address 0x%" PRIx64 " differs from physical "
			    "address 0x%" PRIx64 ": cloak maps guest memory 1:1, link with equal "
			    "VMA and LMA (no AT() in the linker script)", i, p->p_vaddr, p->p_paddr);
	if (p->p_memsz == 0)
		return 0; /* occupies no memory: nothing to load or to check against */
	if (p->p_vaddr < CLOAK_GPA_GUEST_MIN)
		return fail(l, "segment %u [0x%" PRIx64 ", 0x%" PRIx64 ") overlaps the monitor's "
			    "reserved area below 0x%llx: link the guest at 0x%llx or above",
			    i, p->p_vaddr, end, CLOAK_GPA_GUEST_MIN, CLOAK_GPA_GUEST_MIN);
	if (end > l->mem_size)
		return fail(l, "segment %u [0x%" PRIx64 ", 0x%" PRIx64 ") ends beyond guest memory "
			    "(%s); build with a lower address or pass a larger --mem",
			    i, p->p_vaddr, end, human_size(l->mem_size, size, sizeof(size)));
	if (end > CLOAK_GPA_IMAGE_END_MAX)
		return fail(l, "segment %u [0x%" PRIx64 ", 0x%" PRIx64 ") ends above 0x%llx, the "
			    "highest address cloak maps an image at (in 4 KiB pages): link it "
			    "lower", i, p->p_vaddr, end, CLOAK_GPA_IMAGE_END_MAX);
	if ((p->p_flags & (PF_W | PF_X)) == (PF_W | PF_X))
		return fail(l, "segment %u [0x%" PRIx64 ", 0x%" PRIx64 ") is both writable and "
			    "executable (W+X refused): link code and data into separate segments",
			    i, p->p_vaddr, end);
	if (p->p_align > 1 && p->p_vaddr % p->p_align != p->p_offset % p->p_align)
		return fail(l, "segment %u: address 0x%" PRIx64 " and file offset 0x%" PRIx64
			    " disagree modulo its alignment 0x%" PRIx64 ": the file is corrupt",
			    i, p->p_vaddr, p->p_offset, p->p_align);
	l->seg[l->nseg++] = (struct load_seg){
		.index = i, .start = p->p_vaddr, .end = end, .offset = p->p_offset,
		.filesz = p->p_filesz, .flags = p->p_flags,
	};
	return 0;
}

/* True if one of a, b is writable and the other executable. */
static bool wx_conflict(const struct load_seg *a, const struct load_seg *b)
{
	return ((a->flags & PF_W) && (b->flags & PF_X)) || ((a->flags & PF_X) && (b->flags & PF_W));
}

/* Segments must not overlap, and must not share a page whose protection
 * would then have to be both writable and executable. At most 64 segments:
 * the quadratic scan is cheap. */
static int check_layout(struct loader *l)
{
	if (l->nseg == 0)
		return fail(l, "no loadable segment (PT_LOAD with non-zero size): "
			    "link the guest against the cloak runtime");
	for (unsigned a = 0; a < l->nseg; a++) {
		for (unsigned b = a + 1; b < l->nseg; b++) {
			const struct load_seg *x = &l->seg[a], *y = &l->seg[b];
			if (x->start < y->end && y->start < x->end)
				return fail(l, "segments %u [0x%" PRIx64 ", 0x%" PRIx64 ") and %u [0x%" PRIx64
					    ", 0x%" PRIx64 ") overlap: the file is corrupt",
					    x->index, x->start, x->end, y->index, y->start, y->end);
			if (page_down(x->start) < page_up(y->end) &&
			    page_down(y->start) < page_up(x->end) && wx_conflict(x, y))
				return fail(l, "segments %u and %u share a 4 KiB page, one writable and the "
					    "other executable (the page would be W+X): align segments to "
					    "4 KiB in the linker script", x->index, y->index);
		}
	}
	return 0;
}

/* The entry point must be code the file provides: inside the file-backed
 * part of an executable segment (the zero-filled tail holds no code). */
static int check_entry(struct loader *l, uint64_t *lowest, uint64_t *highest)
{
	bool found = false;
	*lowest = UINT64_MAX;
	*highest = 0;
	for (unsigned s = 0; s < l->nseg; s++) {
		const struct load_seg *g = &l->seg[s];
		if ((g->flags & PF_X) && l->eh.e_entry >= g->start &&
		    l->eh.e_entry - g->start < g->filesz)
			found = true;
		if (g->start < *lowest)
			*lowest = g->start;
		if (g->end > *highest)
			*highest = g->end;
	}
	if (!found)
		return fail(l, "entry point 0x%" PRIx64 " is not inside the code of an executable "
			    "segment: check ENTRY() in the guest's linker script", l->eh.e_entry);
	*lowest = page_down(*lowest);
	*highest = page_up(*highest);
	return 0;
}

static int load_segments(struct loader *l, struct guestmem *gm)
{
	for (unsigned s = 0; s < l->nseg; s++) {
		const struct load_seg *g = &l->seg[s];
		enum gm_status st = gm_copy_to(gm, gpa(g->start), l->file + g->offset, g->filesz);
		if (st == GM_OK)
			st = gm_zero(gm, gpa(g->start + g->filesz), g->end - g->start - g->filesz);
		if (st != GM_OK)
			return fail(l, "internal error: guest memory refused segment %u [0x%" PRIx64
				    ", 0x%" PRIx64 ") (status %d) after validation; please report it",
				    g->index, g->start, g->end, (int)st);
	}
	return 0;
}

/* Every check, in order; nothing is written anywhere. */
static int validate(struct loader *l, struct elf_image *out)
{
	uint64_t lowest, highest;
	if (l->file == NULL && l->len != 0)
		return fail(l, "internal error: no file contents");
	/* Identity first (is this a cloak guest at all?), then shape, then
	 * placement: the first message a user sees names the real problem. */
	if (check_header(l) || read_phdrs(l) || check_abi_note(l) || check_static(l))
		return -1;
	for (unsigned i = 0; i < l->phnum; i++)
		if (l->ph[i].p_type == PT_LOAD && check_load(l, i) != 0)
			return -1;
	if (check_layout(l) || check_entry(l, &lowest, &highest))
		return -1;
	*out = (struct elf_image){
		.entry = l->eh.e_entry, .lowest = lowest, .highest = highest,
		.abi_version = l->abi_version, .nseg = l->nseg,
	};
	for (unsigned s = 0; s < l->nseg; s++)
		out->seg[s] = (struct elf_segment){
			.start = page_down(l->seg[s].start), .end = page_up(l->seg[s].end),
			.write = (l->seg[s].flags & PF_W) != 0, .exec = (l->seg[s].flags & PF_X) != 0,
		};
	return 0;
}

/* The loader state is large (about 6.6 KiB) but bounded; static storage
 * would not be reentrant, the heap would add a failure mode for nothing. */
int elf_check(uint64_t mem_size, const void *file, size_t len, struct elf_image *out,
	      struct fail *f)
{
	struct loader l = { .file = file, .len = len, .mem_size = mem_size, .f = f };
	return validate(&l, out);
}

int elf_load(struct guestmem *gm, const void *file, size_t len, struct elf_image *out,
	     struct fail *f)
{
	struct loader l = { .file = file, .len = len, .mem_size = gm_size(gm), .f = f };
	struct elf_image img;
	if (validate(&l, &img) || load_segments(&l, gm))
		return -1;
	*out = img;
	return 0;
}

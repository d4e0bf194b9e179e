/* SPDX-License-Identifier: ISC */
/*
 * Unit tests of the ELF loader (monitor/setup/elf_load.c) against real
 * guest memory (the anonymous backend of monitor/mem/guestmem.c).
 *
 * Valid images come from tests/unit/elf_builder.c. Each malformed case
 * mutates one and asserts that elf_load() refuses it with the specific
 * reason, as one line, and without writing a byte of guest memory.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cloak/abi.h"
#include "elf_builder.h"
#include "setup/elf_load.h"
#include "mem/guestmem.h"

#define TEST_MEM (16ull << 20)
#define JUNK 0xa5

struct bad_case;

struct fixture {
	struct guestmem *gm;
	struct eb_image img;
	struct fail fl;
	const char *err; /* fl.msg */
	const struct bad_case *bad; /* for the table-driven rejection tests */
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct fail fl = { 0 };
	if (!f)
		return -1;
	f->err = f->fl.msg;
	f->gm = gm_create(GM_BACKEND_ANON, TEST_MEM, -1, &fl);
	if (!f->gm) {
		fprintf(stderr, "gm_create: %s\n", fl.msg);
		free(f);
		return -1;
	}
	eb_build_default(&f->img);
	f->bad = *state; /* cmocka passes the prestate in *state */
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	gm_destroy(f->gm);
	free(f);
	return 0;
}

static int load(struct fixture *f, struct elf_image *out)
{
	f->fl = (struct fail){ 0 };
	return elf_load(f->gm, f->img.bytes, f->img.len, out, &f->fl);
}

static void fill_guest(struct guestmem *gm, uint64_t start, uint64_t len, uint8_t byte)
{
	uint8_t buf[4096];
	memset(buf, byte, sizeof(buf));
	for (uint64_t off = 0; off < len; off += sizeof(buf)) {
		uint64_t n = len - off < sizeof(buf) ? len - off : sizeof(buf);
		assert_int_equal(gm_copy_to(gm, gpa(start + off), buf, n), GM_OK);
	}
}

/* Asserts every byte of guest [start, start+len) equals byte. */
static void assert_guest_all(struct guestmem *gm, uint64_t start, uint64_t len, uint8_t byte)
{
	uint8_t buf[65536], want[65536];
	memset(want, byte, sizeof(want));
	for (uint64_t off = 0; off < len; off += sizeof(buf)) {
		uint64_t n = len - off < sizeof(buf) ? len - off : sizeof(buf);
		assert_int_equal(gm_copy_from(gm, buf, gpa(start + off), n), GM_OK);
		if (memcmp(buf, want, n) != 0) {
			for (uint64_t i = 0; i < n; i++)
				if (buf[i] != byte)
					fail_msg("guest byte 0x%llx is 0x%02x, expected 0x%02x",
						 (unsigned long long)(start + off + i), buf[i], byte);
		}
	}
}

static void assert_guest_pattern(struct guestmem *gm, uint64_t start, uint64_t len, unsigned salt)
{
	uint8_t buf[EB_IMAGE_MAX];
	assert_true(len <= sizeof(buf));
	assert_int_equal(gm_copy_from(gm, buf, gpa(start), len), GM_OK);
	for (uint64_t i = 0; i < len; i++)
		if (buf[i] != eb_pattern(salt, i))
			fail_msg("guest byte 0x%llx is 0x%02x, expected 0x%02x from the file",
				 (unsigned long long)(start + i), buf[i], eb_pattern(salt, i));
}

/* ------------------------------------------------------------------ */
/* Valid images                                                        */
/* ------------------------------------------------------------------ */

/* Region the default image loads into, with a page of margin each side. */
#define AROUND_START (EB_TEXT_GPA - 0x1000)
#define AROUND_END (EB_DATA_GPA + 0x4000)

static void test_loads_default_image(void **state)
{
	struct fixture *f = *state;
	struct elf_image im;
	fill_guest(f->gm, AROUND_START, AROUND_END - AROUND_START, JUNK);

	assert_int_equal(load(f, &im), 0);
	assert_int_equal(im.entry, EB_ENTRY);
	assert_int_equal(im.lowest, EB_TEXT_GPA);
	assert_int_equal(im.highest, 0x204000); /* 0x201000 + 0x2100, page up */
	assert_int_equal(im.abi_version, CLOAK_ABI_VERSION);
	struct elf_image ic;
	assert_int_equal(elf_check(TEST_MEM, f->img.bytes, f->img.len, &ic, &f->fl), 0);
	assert_int_equal(ic.entry, im.entry);
	assert_int_equal(ic.lowest, im.lowest);
	assert_int_equal(ic.highest, im.highest);
	assert_int_equal(ic.abi_version, im.abi_version);

	assert_guest_pattern(f->gm, EB_TEXT_GPA, EB_TEXT_FILESZ, 1);
	assert_guest_pattern(f->gm, EB_DATA_GPA, EB_DATA_FILESZ, 2);
	/* BSS: zeroed over the junk, across its page boundary. */
	assert_guest_all(f->gm, EB_DATA_GPA + EB_DATA_FILESZ, EB_DATA_MEMSZ - EB_DATA_FILESZ, 0);
	/* Nothing written outside the segments. */
	assert_guest_all(f->gm, AROUND_START, EB_TEXT_GPA - AROUND_START, JUNK);
	assert_guest_all(f->gm, EB_TEXT_GPA + EB_TEXT_FILESZ,
			 EB_DATA_GPA - EB_TEXT_GPA - EB_TEXT_FILESZ, JUNK);
	assert_guest_all(f->gm, EB_DATA_GPA + EB_DATA_MEMSZ,
			 AROUND_END - EB_DATA_GPA - EB_DATA_MEMSZ, JUNK);
}

static void test_segment_order_does_not_matter(void **state)
{
	struct fixture *f = *state;
	struct elf_image im;
	Elf64_Phdr text = *eb_phdr(&f->img, EB_PH_TEXT);
	*eb_phdr(&f->img, EB_PH_TEXT) = *eb_phdr(&f->img, EB_PH_DATA);
	*eb_phdr(&f->img, EB_PH_DATA) = text;

	assert_int_equal(load(f, &im), 0);
	assert_int_equal(im.lowest, EB_TEXT_GPA);
	assert_int_equal(im.highest, 0x204000);
	assert_guest_pattern(f->gm, EB_TEXT_GPA, EB_TEXT_FILESZ, 1);
	assert_guest_pattern(f->gm, EB_DATA_GPA, EB_DATA_FILESZ, 2);
}

/* Writes a note at file offset off with the given alignment; returns its
 * padded size. */
static size_t put_note(struct eb_image *img, size_t off, size_t align, const char *name,
		       uint32_t type, const void *desc, uint32_t descsz)
{
	Elf64_Nhdr nh = { .n_namesz = (uint32_t)strlen(name) + 1, .n_descsz = descsz, .n_type = type };
	size_t desc_rel = (sizeof(nh) + nh.n_namesz + align - 1) & ~(align - 1);
	memcpy(img->bytes + off, &nh, sizeof(nh));
	memcpy(img->bytes + off + sizeof(nh), name, nh.n_namesz);
	memcpy(img->bytes + off + desc_rel, desc, descsz);
	return desc_rel + ((descsz + align - 1) & ~(align - 1));
}

static void notes_after_gnu_note(struct fixture *f, size_t align)
{
	struct elf_image im;
	struct cloak_note_abi abi = { .abi_version = CLOAK_ABI_VERSION };
	uint32_t gnu_desc[3] = { 0, 4, 0 };
	memset(f->img.bytes + EB_NOTE_OFFSET, 0, 0x100);
	size_t n = put_note(&f->img, EB_NOTE_OFFSET, align, "GNU", NT_GNU_ABI_TAG, gnu_desc, 12);
	/* A note of another vendor that reuses our type number: not ours. */
	n += put_note(&f->img, EB_NOTE_OFFSET + n, align, "CLOAKY", CLOAK_NOTE_TYPE_ABI, &abi, 8);
	n += put_note(&f->img, EB_NOTE_OFFSET + n, align, CLOAK_NOTE_NAME, CLOAK_NOTE_TYPE_ABI,
		      &abi, sizeof(abi));
	eb_phdr(&f->img, EB_PH_NOTE)->p_filesz = n;
	eb_phdr(&f->img, EB_PH_NOTE)->p_align = align;
	assert_int_equal(load(f, &im), 0);
	assert_int_equal(im.abi_version, CLOAK_ABI_VERSION);

	/* The same notes without the last one: the note walk must not find
	 * ours in the others. */
	eb_build_default(&f->img);
	memset(f->img.bytes + EB_NOTE_OFFSET, 0, 0x100);
	n = put_note(&f->img, EB_NOTE_OFFSET, align, "GNU", NT_GNU_ABI_TAG, gnu_desc, 12);
	n += put_note(&f->img, EB_NOTE_OFFSET + n, align, "CLOAKY", CLOAK_NOTE_TYPE_ABI, &abi, 8);
	eb_phdr(&f->img, EB_PH_NOTE)->p_filesz = n;
	eb_phdr(&f->img, EB_PH_NOTE)->p_align = align;
	assert_int_equal(load(f, &im), -1);
	assert_non_null(strstr(f->err, "no CLOAK ABI note"));
}

static void test_note_found_after_other_notes_4_aligned(void **state)
{
	notes_after_gnu_note(*state, 4);
}

static void test_note_found_after_other_notes_8_aligned(void **state)
{
	notes_after_gnu_note(*state, 8);
}

static void test_boundaries_accepted(void **state)
{
	struct fixture *f = *state;
	struct elf_image im;
	/* Entry on the last byte of code. */
	eb_ehdr(&f->img)->e_entry = EB_TEXT_GPA + EB_TEXT_FILESZ - 1;
	assert_int_equal(load(f, &im), 0);
	assert_int_equal(im.entry, EB_TEXT_GPA + EB_TEXT_FILESZ - 1);

	/* Text at exactly the lowest guest address, data ending exactly at
	 * the end of guest memory (its BSS zeroed there). */
	eb_build_default(&f->img);
	Elf64_Phdr *t = eb_phdr(&f->img, EB_PH_TEXT), *d = eb_phdr(&f->img, EB_PH_DATA);
	t->p_vaddr = t->p_paddr = CLOAK_GPA_GUEST_MIN;
	eb_ehdr(&f->img)->e_entry = CLOAK_GPA_GUEST_MIN;
	d->p_vaddr = d->p_paddr = TEST_MEM - 0x3000;
	d->p_memsz = 0x3000;
	fill_guest(f->gm, TEST_MEM - 0x3000, 0x3000, JUNK);
	assert_int_equal(load(f, &im), 0);
	assert_int_equal(im.lowest, CLOAK_GPA_GUEST_MIN);
	assert_int_equal(im.highest, TEST_MEM);
	assert_guest_pattern(f->gm, CLOAK_GPA_GUEST_MIN, EB_TEXT_FILESZ, 1);
	assert_guest_pattern(f->gm, TEST_MEM - 0x3000, EB_DATA_FILESZ, 2);
	assert_guest_all(f->gm, TEST_MEM - 0x3000 + EB_DATA_FILESZ, 0x3000 - EB_DATA_FILESZ, 0);
}

/* A PT_LOAD of size zero occupies nothing: it is neither loaded nor held
 * against the reserved area, and does not count for lowest/highest. */
static void test_empty_load_segment_ignored(void **state)
{
	struct fixture *f = *state;
	struct elf_image im;
	*eb_phdr(&f->img, EB_PH_STACK) = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R };
	assert_int_equal(load(f, &im), 0);
	assert_int_equal(im.lowest, EB_TEXT_GPA);
	assert_int_equal(im.highest, 0x204000);
}

/* A rejection carries the status the monitor exits with. */
static void test_rejection_status(void **state)
{
	struct fixture *f = *state;
	struct elf_image im;
	eb_ehdr(&f->img)->e_machine = EM_AARCH64;
	assert_int_equal(load(f, &im), -1);
	assert_int_equal(f->fl.status, CLOAK_EXIT_BADIMAGE);
}

/* ------------------------------------------------------------------ */
/* Malformed images: one mutation each, one expected reason each.      */
/* ------------------------------------------------------------------ */

struct bad_case {
	const char *name;
	void (*mutate)(struct eb_image *img);
	const char *expect;  /* substring of the reason */
	const char *expect2; /* second substring, or NULL */
};

static Elf64_Phdr *text(struct eb_image *img) { return eb_phdr(img, EB_PH_TEXT); }
static Elf64_Phdr *data(struct eb_image *img) { return eb_phdr(img, EB_PH_DATA); }

static void m_short_file(struct eb_image *img) { img->len = sizeof(Elf64_Ehdr) - 1; }
static void m_empty_file(struct eb_image *img) { img->len = 0; }
static void m_bad_magic(struct eb_image *img) { img->bytes[EI_MAG1] = 'e'; }
static void m_class32(struct eb_image *img) { img->bytes[EI_CLASS] = ELFCLASS32; }
static void m_big_endian(struct eb_image *img) { img->bytes[EI_DATA] = ELFDATA2MSB; }
static void m_ident_version(struct eb_image *img) { img->bytes[EI_VERSION] = 2; }
static void m_e_version(struct eb_image *img) { eb_ehdr(img)->e_version = 0; }
static void m_et_dyn(struct eb_image *img) { eb_ehdr(img)->e_type = ET_DYN; }
static void m_et_rel(struct eb_image *img) { eb_ehdr(img)->e_type = ET_REL; }
static void m_machine(struct eb_image *img) { eb_ehdr(img)->e_machine = EM_386; }
static void m_ehsize(struct eb_image *img) { eb_ehdr(img)->e_ehsize = 52; }
static void m_phentsize(struct eb_image *img) { eb_ehdr(img)->e_phentsize = 32; }
static void m_no_phdrs(struct eb_image *img) { eb_ehdr(img)->e_phnum = 0; }
static void m_too_many_phdrs(struct eb_image *img) { eb_ehdr(img)->e_phnum = ELF_LOAD_MAX_PHDRS + 1; }
static void m_pn_xnum(struct eb_image *img) { eb_ehdr(img)->e_phnum = PN_XNUM; }
static void m_phoff_past_end(struct eb_image *img) { eb_ehdr(img)->e_phoff = EB_LEN - 100; }
static void m_phoff_wraps(struct eb_image *img) { eb_ehdr(img)->e_phoff = UINT64_MAX - 8; }
static void m_truncated_phdrs(struct eb_image *img) { img->len = sizeof(Elf64_Ehdr) + 2 * sizeof(Elf64_Phdr) + 5; }

static void m_no_load(struct eb_image *img)
{
	text(img)->p_type = PT_NULL;
	data(img)->p_type = PT_NULL;
}

static void m_only_empty_loads(struct eb_image *img)
{
	text(img)->p_memsz = text(img)->p_filesz = 0;
	data(img)->p_memsz = data(img)->p_filesz = 0;
}

static void m_filesz_gt_memsz(struct eb_image *img) { data(img)->p_memsz = data(img)->p_filesz - 1; }
static void m_truncated_segment(struct eb_image *img) { img->len = EB_DATA_OFFSET + 0x10; }
static void m_offset_past_end(struct eb_image *img) { text(img)->p_offset = EB_LEN; }
static void m_offset_wraps(struct eb_image *img) { text(img)->p_offset = UINT64_MAX - 0x10; }

static void m_vaddr_wraps(struct eb_image *img)
{
	data(img)->p_vaddr = data(img)->p_paddr = UINT64_MAX & ~0xfffull;
	data(img)->p_memsz = 0x2000;
}

static void m_reserved_area(struct eb_image *img)
{
	data(img)->p_vaddr = data(img)->p_paddr = CLOAK_GPA_GUEST_MIN - 0x1000;
}

static void m_null_page(struct eb_image *img) { data(img)->p_vaddr = data(img)->p_paddr = 0; }

static void m_beyond_memory(struct eb_image *img)
{
	/* Starts inside memory, ends one byte beyond it. */
	data(img)->p_vaddr = data(img)->p_paddr = TEST_MEM - 0x3000;
	data(img)->p_memsz = 0x3001;
}

static void m_far_beyond_memory(struct eb_image *img)
{
	data(img)->p_vaddr = data(img)->p_paddr = 0x7f0000000000ull;
}

static void m_vaddr_ne_paddr(struct eb_image *img) { data(img)->p_paddr = 0x301000; }

static void m_overlap(struct eb_image *img)
{
	/* Data placed over the end of the text (alignment 0: no page
	 * congruence asked, so only the overlap is wrong). */
	data(img)->p_vaddr = data(img)->p_paddr = EB_TEXT_GPA + 0x100;
	data(img)->p_align = 0;
}

static void m_overlap_same_start(struct eb_image *img)
{
	*eb_phdr(img, EB_PH_STACK) = *text(img);
	eb_phdr(img, EB_PH_STACK)->p_memsz = eb_phdr(img, EB_PH_STACK)->p_filesz = 1;
}

static void m_wx(struct eb_image *img) { text(img)->p_flags |= PF_W; }

static void m_wx_shared_page(struct eb_image *img)
{
	/* Data right after the text, in the same page: no byte overlaps,
	 * but the page would have to be writable and executable. */
	data(img)->p_vaddr = data(img)->p_paddr = EB_TEXT_GPA + 0x200;
	data(img)->p_align = 0;
}

static void m_align_not_pow2(struct eb_image *img) { text(img)->p_align = 0x3000; }

static void m_align_incongruent(struct eb_image *img)
{
	data(img)->p_vaddr = data(img)->p_paddr = EB_DATA_GPA + 0x10;
}

static void m_entry_outside(struct eb_image *img) { eb_ehdr(img)->e_entry = 0x500000; }
static void m_entry_in_data(struct eb_image *img) { eb_ehdr(img)->e_entry = EB_DATA_GPA + 8; }
static void m_entry_zero(struct eb_image *img) { eb_ehdr(img)->e_entry = 0; }

static void m_entry_past_code(struct eb_image *img)
{
	/* Inside the executable segment's memory but past its file bytes. */
	text(img)->p_memsz = 0x1000;
	eb_ehdr(img)->e_entry = EB_TEXT_GPA + EB_TEXT_FILESZ;
}

static void m_interp(struct eb_image *img) { eb_phdr(img, EB_PH_STACK)->p_type = PT_INTERP; }
static void m_dynamic(struct eb_image *img) { eb_phdr(img, EB_PH_STACK)->p_type = PT_DYNAMIC; }
static void m_no_note_phdr(struct eb_image *img) { eb_phdr(img, EB_PH_NOTE)->p_type = PT_NULL; }
static void m_note_wrong_name(struct eb_image *img) { eb_note(img)->name[4] = 'X'; }
static void m_note_wrong_type(struct eb_image *img) { eb_note(img)->nh.n_type = 1; }
static void m_abi_version(struct eb_image *img) { eb_note(img)->desc.abi_version = CLOAK_ABI_VERSION + 1; }
static void m_note_descsz_short(struct eb_image *img) { eb_note(img)->nh.n_descsz = 4; }
static void m_note_descsz_huge(struct eb_image *img) { eb_note(img)->nh.n_descsz = UINT32_MAX; }
static void m_note_namesz_huge(struct eb_image *img) { eb_note(img)->nh.n_namesz = UINT32_MAX - 2; }

static void m_note_segment_short(struct eb_image *img)
{
	/* The segment ends inside the descriptor. */
	eb_phdr(img, EB_PH_NOTE)->p_filesz = sizeof(struct eb_note) - 4;
}

static void m_note_header_truncated(struct eb_image *img)
{
	eb_phdr(img, EB_PH_NOTE)->p_filesz = sizeof(struct eb_note) + 6;
}

static void m_note_outside_file(struct eb_image *img)
{
	eb_phdr(img, EB_PH_NOTE)->p_offset = EB_LEN - 8;
}

static void m_two_notes(struct eb_image *img)
{
	memcpy(img->bytes + EB_NOTE_OFFSET + sizeof(struct eb_note), eb_note(img), sizeof(struct eb_note));
	eb_phdr(img, EB_PH_NOTE)->p_filesz = 2 * sizeof(struct eb_note);
}

#define BAD(fn, e1, e2) { #fn, fn, e1, e2 }
static const struct bad_case bad_cases[] = {
	BAD(m_short_file, "too short for an ELF64 header", NULL),
	BAD(m_empty_file, "too short for an ELF64 header", "0 bytes"),
	BAD(m_bad_magic, "bad magic", NULL),
	BAD(m_class32, "not ELFCLASS64", NULL),
	BAD(m_big_endian, "not little-endian", NULL),
	BAD(m_ident_version, "not EV_CURRENT", NULL),
	BAD(m_e_version, "not EV_CURRENT", NULL),
	BAD(m_et_dyn, "ET_DYN", "-no-pie"),
	BAD(m_et_rel, "not an executable (ET_EXEC)", NULL),
	BAD(m_machine, "not x86-64", NULL),
	BAD(m_ehsize, "ELF header size 52", NULL),
	BAD(m_phentsize, "program header size 32", NULL),
	BAD(m_no_phdrs, "no program headers", NULL),
	BAD(m_too_many_phdrs, "too many program headers (65", NULL),
	BAD(m_pn_xnum, "too many program headers", NULL),
	BAD(m_phoff_past_end, "program header table", "outside"),
	BAD(m_phoff_wraps, "program header table", "outside"),
	BAD(m_truncated_phdrs, "program header table", "truncated"),
	BAD(m_no_load, "no loadable segment", NULL),
	BAD(m_only_empty_loads, "no loadable segment", NULL),
	BAD(m_filesz_gt_memsz, "segment 1: file size 0x100 exceeds memory size 0xff", NULL),
	BAD(m_truncated_segment, "segment 1: file range", "outside the 8208-byte file"),
	BAD(m_offset_past_end, "segment 0: file range", "outside"),
	BAD(m_offset_wraps, "segment 0: file range", "outside"),
	BAD(m_vaddr_wraps, "segment 1", "wraps around"),
	BAD(m_reserved_area, "segment 1 [0xff000, 0x101100) overlaps the monitor's reserved area",
	    "link the guest at 0x100000 or above"),
	BAD(m_null_page, "reserved area", NULL),
	BAD(m_beyond_memory, "segment 1 [0xffd000, 0x1000001) ends beyond guest memory (16 MiB)",
	    "pass a larger --mem"),
	BAD(m_far_beyond_memory, "ends beyond guest memory", NULL),
	BAD(m_vaddr_ne_paddr, "differs from physical address 0x301000", NULL),
	BAD(m_overlap, "segments 0 [0x200000, 0x200180) and 1 [0x200100, 0x202200) overlap", NULL),
	BAD(m_overlap_same_start, "segments 0", "and 3 [0x200000, 0x200001) overlap"),
	BAD(m_wx, "segment 0 [0x200000, 0x200180) is both writable and executable", "W+X refused"),
	BAD(m_wx_shared_page, "segments 0 and 1 share a 4 KiB page", "W+X"),
	BAD(m_align_not_pow2, "alignment 0x3000 is not a power of two", NULL),
	BAD(m_align_incongruent, "disagree modulo its alignment", NULL),
	BAD(m_entry_outside, "entry point 0x500000 is not inside", NULL),
	BAD(m_entry_in_data, "entry point 0x201008", "executable segment"),
	BAD(m_entry_zero, "entry point 0x0", NULL),
	BAD(m_entry_past_code, "entry point 0x200180", NULL),
	BAD(m_interp, "PT_INTERP", "-static -no-pie"),
	BAD(m_dynamic, "PT_DYNAMIC", "-static -no-pie"),
	BAD(m_no_note_phdr, "not a cloak guest (no CLOAK ABI note): link it against the cloak runtime", NULL),
	BAD(m_note_wrong_name, "no CLOAK ABI note", NULL),
	BAD(m_note_wrong_type, "no CLOAK ABI note", NULL),
	BAD(m_abi_version, "ABI version 2", "version 1"),
	BAD(m_note_descsz_short, "4-byte descriptor, expected 8", NULL),
	BAD(m_note_descsz_huge, "runs past the end of the segment", NULL),
	BAD(m_note_namesz_huge, "runs past the end of the segment", NULL),
	BAD(m_note_segment_short, "runs past the end of the segment", NULL),
	BAD(m_note_header_truncated, "truncated note header", NULL),
	BAD(m_note_outside_file, "note segment 2", "outside the 8448-byte file"),
	BAD(m_two_notes, "two CLOAK ABI notes", NULL),
};
#define NBAD (sizeof(bad_cases) / sizeof(bad_cases[0]))

static void test_rejects(void **state)
{
	struct fixture *f = *state;
	const struct bad_case *c = f->bad;
	struct elf_image im;
	memset(&im, 0x5a, sizeof(im));
	struct elf_image untouched = im;

	c->mutate(&f->img);
	assert_int_equal(load(f, &im), -1);
	if (!strstr(f->err, c->expect) || (c->expect2 && !strstr(f->err, c->expect2)))
		fail_msg("%s: reason \"%s\" lacks \"%s\"%s%s%s", c->name, f->err, c->expect,
			 c->expect2 ? " and \"" : "", c->expect2 ? c->expect2 : "",
			 c->expect2 ? "\"" : "");
	assert_null(strchr(f->err, '\n'));
	/* elf_check, which the monitor runs before it opens KVM, gives the
	 * same verdict and reason without any guest memory. */
	struct fail check = { 0 };
	struct elf_image ic;
	assert_int_equal(elf_check(TEST_MEM, f->img.bytes, f->img.len, &ic, &check), -1);
	assert_string_equal(check.msg, f->err);
	/* Refused before anything was written: output and memory untouched
	 * (fresh anonymous guest memory is all zero). */
	assert_memory_equal(&im, &untouched, sizeof(im));
	assert_guest_all(f->gm, 0, TEST_MEM, 0);
}

/* Images must end by CLOAK_GPA_IMAGE_END_MAX (they are mapped in 4 KiB
 * pages whose tables live in the reserved area), whatever the memory size. */
static void test_image_end_limit(void **state)
{
	struct fixture *f = *state;
	Elf64_Phdr *d = eb_phdr(&f->img, EB_PH_DATA);
	d->p_vaddr = d->p_paddr = CLOAK_GPA_IMAGE_END_MAX - 0x1000;
	d->p_offset = EB_DATA_OFFSET; /* congruent with the address modulo 4 KiB */
	struct elf_image im;
	f->fl = (struct fail){ 0 };
	assert_int_equal(elf_check(512ull << 20, f->img.bytes, f->img.len, &im, &f->fl), -1);
	assert_non_null(strstr(f->err, "highest address cloak maps an image at"));
	/* Ending exactly at the limit is fine. */
	d->p_memsz = 0x1000; /* p_filesz stays within the file */
	f->fl = (struct fail){ 0 };
	if (elf_check(512ull << 20, f->img.bytes, f->img.len, &im, &f->fl))
		fail_msg("at the limit: %s", f->err);
	assert_int_equal(im.nseg, 2);
	assert_true(im.seg[0].exec && !im.seg[0].write);
	assert_true(im.seg[1].write && !im.seg[1].exec);
	assert_int_equal(im.seg[1].end, CLOAK_GPA_IMAGE_END_MAX);
}

int main(void)
{
	static const struct CMUnitTest valid[] = {
		cmocka_unit_test_setup_teardown(test_loads_default_image, setup, teardown),
		cmocka_unit_test_setup_teardown(test_segment_order_does_not_matter, setup, teardown),
		cmocka_unit_test_setup_teardown(test_note_found_after_other_notes_4_aligned, setup, teardown),
		cmocka_unit_test_setup_teardown(test_note_found_after_other_notes_8_aligned, setup, teardown),
		cmocka_unit_test_setup_teardown(test_boundaries_accepted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_load_segment_ignored, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rejection_status, setup, teardown),
		cmocka_unit_test_setup_teardown(test_image_end_limit, setup, teardown),
	};
	enum { NVALID = sizeof(valid) / sizeof(valid[0]) };
	static struct CMUnitTest tests[NVALID + NBAD];
	for (size_t i = 0; i < NVALID; i++)
		tests[i] = valid[i];
	for (size_t i = 0; i < NBAD; i++)
		tests[NVALID + i] = (struct CMUnitTest){
			.name = bad_cases[i].name, .test_func = test_rejects,
			.setup_func = setup, .teardown_func = teardown,
			.initial_state = (void *)&bad_cases[i],
		};
	return _cmocka_run_group_tests("elf_load", tests, NVALID + NBAD, NULL, NULL);
}

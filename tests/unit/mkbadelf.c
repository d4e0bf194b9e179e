/* SPDX-License-Identifier: ISC */
/*
 * mkbadelf: writes malformed variants of a valid cloak guest, one file per
 * case, for the integration tests (tests/integration/badelf.bats) and as
 * fuzz seeds.
 *
 *   mkbadelf GUEST.elf OUTDIR   writes OUTDIR/CASE.elf for every case below
 *   mkbadelf --synth FILE       writes the unit tests' synthetic valid guest
 *   mkbadelf --list             prints the case names
 *
 * Each variant breaks exactly one rule of monitor/setup/elf_load.c, and is built
 * so that the rule it breaks is the first one the loader checks.
 */
#include <elf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cloak/abi.h"
#include "elf_builder.h"

/* The input guest and what the cases need to know about it. */
struct guest {
	const char *path;
	uint8_t *bytes;
	size_t len;
	Elf64_Ehdr eh;
	int text;    /* first executable PT_LOAD */
	int other;   /* first other PT_LOAD */
	int lowest;  /* PT_LOAD with the lowest address */
	int highest; /* PT_LOAD with the highest address */
	size_t note; /* file offset of the CLOAK ABI note's header */
	size_t note_desc; /* file offset of its descriptor */
};

/* One variant being written: a private copy of the guest. */
struct variant {
	uint8_t *bytes;
	size_t len;
};

__attribute__((format(printf, 1, 2), noreturn))
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("mkbadelf: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

/* Headers are read and written through memcpy: phoff need not be aligned. */
static Elf64_Ehdr get_ehdr(const uint8_t *b)
{
	Elf64_Ehdr eh;
	memcpy(&eh, b, sizeof(eh));
	return eh;
}

static void put_ehdr(uint8_t *b, const Elf64_Ehdr *eh)
{
	memcpy(b, eh, sizeof(*eh));
}

static Elf64_Phdr get_phdr(const uint8_t *b, int i)
{
	Elf64_Phdr ph;
	memcpy(&ph, b + get_ehdr(b).e_phoff + (size_t)i * sizeof(ph), sizeof(ph));
	return ph;
}

static void put_phdr(uint8_t *b, int i, const Elf64_Phdr *ph)
{
	memcpy(b + get_ehdr(b).e_phoff + (size_t)i * sizeof(*ph), ph, sizeof(*ph));
}

static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		die("cannot open %s: %s", path, strerror(errno));
	size_t cap = 1 << 16, n = 0;
	uint8_t *buf = malloc(cap);
	for (;;) {
		if (!buf)
			die("out of memory reading %s", path);
		n += fread(buf + n, 1, cap - n, f);
		if (n < cap)
			break;
		cap *= 2;
		buf = realloc(buf, cap);
	}
	if (ferror(f))
		die("cannot read %s", path);
	fclose(f);
	*len = n;
	return buf;
}

static void write_file(const char *path, const void *bytes, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(bytes, 1, len, f) != len || fclose(f) != 0)
		die("cannot write %s: %s", path, strerror(errno));
}

/* Finds the CLOAK ABI note in the guest's PT_NOTE segments. */
static bool find_note(struct guest *g, const Elf64_Phdr *p)
{
	size_t align = p->p_align == 8 ? 8 : 4;
	size_t pos = p->p_offset, end = p->p_offset + p->p_filesz;
	while (pos + sizeof(Elf64_Nhdr) <= end) {
		Elf64_Nhdr nh;
		memcpy(&nh, g->bytes + pos, sizeof(nh));
		size_t desc = pos + ((sizeof(nh) + nh.n_namesz + align - 1) & ~(align - 1));
		if (desc + nh.n_descsz > end)
			return false;
		if (nh.n_type == CLOAK_NOTE_TYPE_ABI && nh.n_namesz == sizeof(CLOAK_NOTE_NAME) &&
		    memcmp(g->bytes + pos + sizeof(nh), CLOAK_NOTE_NAME, sizeof(CLOAK_NOTE_NAME)) == 0) {
			g->note = pos;
			g->note_desc = desc;
			return true;
		}
		pos = desc + ((nh.n_descsz + align - 1) & ~(align - 1));
	}
	return false;
}

/* Checks the input is a guest the cases can be derived from. This is no
 * loader: the input is a trusted build product, the checks only keep the
 * tool from writing out of bounds on a wrong argument. */
static void inspect(struct guest *g)
{
	if (g->len < sizeof(Elf64_Ehdr))
		die("%s is too short to be an ELF file", g->path);
	g->eh = get_ehdr(g->bytes);
	if (memcmp(g->eh.e_ident, ELFMAG, SELFMAG) != 0 || g->eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    g->eh.e_phentsize != sizeof(Elf64_Phdr) || g->eh.e_phnum < 2 ||
	    g->eh.e_phoff > g->len || g->len - g->eh.e_phoff < g->eh.e_phnum * sizeof(Elf64_Phdr))
		die("%s is not an ELF64 executable with program headers", g->path);
	g->text = g->other = g->lowest = g->highest = -1;
	bool note = false;
	for (int i = 0; i < g->eh.e_phnum; i++) {
		Elf64_Phdr p = get_phdr(g->bytes, i);
		if (p.p_type == PT_NOTE && p.p_offset <= g->len && g->len - p.p_offset >= p.p_filesz &&
		    !note)
			note = find_note(g, &p);
		if (p.p_type != PT_LOAD || p.p_memsz == 0)
			continue;
		if (g->text < 0 && (p.p_flags & PF_X))
			g->text = i;
		else if (g->other < 0)
			g->other = i;
		if (g->lowest < 0 || p.p_vaddr < get_phdr(g->bytes, g->lowest).p_vaddr)
			g->lowest = i;
		if (g->highest < 0 || p.p_vaddr > get_phdr(g->bytes, g->highest).p_vaddr)
			g->highest = i;
	}
	if (g->text < 0 || g->other < 0)
		die("%s needs an executable and another PT_LOAD segment", g->path);
	if (!note)
		die("%s has no CLOAK ABI note: pass a guest linked against the cloak runtime", g->path);
}

/* ------------------------------------------------------------------ */
/* The cases. Each changes one thing in v (a copy of g).               */
/* ------------------------------------------------------------------ */

static void truncated_header(const struct guest *g, struct variant *v) { v->len = 40; }

static void truncated_phdrs(const struct guest *g, struct variant *v)
{
	/* Ends half-way through the last program header. */
	v->len = g->eh.e_phoff + g->eh.e_phnum * sizeof(Elf64_Phdr) - sizeof(Elf64_Phdr) / 2;
}

static void bad_magic(const struct guest *g, struct variant *v) { v->bytes[EI_MAG0] = 0x7e; }
static void wrong_class(const struct guest *g, struct variant *v) { v->bytes[EI_CLASS] = ELFCLASS32; }
static void big_endian(const struct guest *g, struct variant *v) { v->bytes[EI_DATA] = ELFDATA2MSB; }

static void wrong_machine(const struct guest *g, struct variant *v)
{
	Elf64_Ehdr eh = g->eh;
	eh.e_machine = EM_AARCH64;
	put_ehdr(v->bytes, &eh);
}

static void et_dyn(const struct guest *g, struct variant *v)
{
	Elf64_Ehdr eh = g->eh;
	eh.e_type = ET_DYN;
	put_ehdr(v->bytes, &eh);
}

static void no_abi_note(const struct guest *g, struct variant *v)
{
	v->bytes[g->note + sizeof(Elf64_Nhdr) + 4] = 'X'; /* "CLOAX" */
}

static void wrong_abi_version(const struct guest *g, struct variant *v)
{
	struct cloak_note_abi abi;
	memcpy(&abi, v->bytes + g->note_desc, sizeof(abi));
	abi.abi_version = CLOAK_ABI_VERSION + 1;
	memcpy(v->bytes + g->note_desc, &abi, sizeof(abi));
}

static void interp(const struct guest *g, struct variant *v)
{
	Elf64_Phdr p = get_phdr(v->bytes, g->other);
	p.p_type = PT_INTERP;
	put_phdr(v->bytes, g->other, &p);
}

static void filesz_gt_memsz(const struct guest *g, struct variant *v)
{
	Elf64_Phdr p = get_phdr(v->bytes, g->text);
	p.p_memsz = p.p_filesz - 1;
	put_phdr(v->bytes, g->text, &p);
}

static void segment_past_eof(const struct guest *g, struct variant *v)
{
	Elf64_Phdr p = get_phdr(v->bytes, g->text);
	p.p_offset = g->len - p.p_filesz / 2;
	put_phdr(v->bytes, g->text, &p);
}

static void reserved_area(const struct guest *g, struct variant *v)
{
	/* Same offset within its megabyte (keeps the page congruence), in
	 * the first megabyte. */
	Elf64_Phdr p = get_phdr(v->bytes, g->lowest);
	p.p_vaddr = p.p_paddr = p.p_vaddr % CLOAK_GPA_GUEST_MIN;
	put_phdr(v->bytes, g->lowest, &p);
}

static void beyond_memory(const struct guest *g, struct variant *v)
{
	/* 256 GiB up: beyond any --mem the monitor accepts (CLOAK_MEM_MAX). */
	Elf64_Phdr p = get_phdr(v->bytes, g->highest);
	p.p_vaddr += 1ull << 38;
	p.p_paddr = p.p_vaddr;
	put_phdr(v->bytes, g->highest, &p);
}

static void wx_segment(const struct guest *g, struct variant *v)
{
	Elf64_Phdr p = get_phdr(v->bytes, g->text);
	p.p_flags |= PF_W;
	put_phdr(v->bytes, g->text, &p);
}

static void overlapping_segments(const struct guest *g, struct variant *v)
{
	/* Another segment at the text's address; alignment 0 asks for no
	 * page congruence, so the overlap is the only fault. */
	Elf64_Phdr t = get_phdr(v->bytes, g->text), p = get_phdr(v->bytes, g->other);
	p.p_vaddr = p.p_paddr = t.p_vaddr;
	p.p_align = 0;
	put_phdr(v->bytes, g->other, &p);
}

static void bad_entry(const struct guest *g, struct variant *v)
{
	/* An address that is loaded but not executable. */
	Elf64_Ehdr eh = g->eh;
	eh.e_entry = get_phdr(v->bytes, g->other).p_vaddr;
	put_ehdr(v->bytes, &eh);
}

static const struct {
	const char *name;
	void (*make)(const struct guest *g, struct variant *v);
} cases[] = {
	{ "truncated-header", truncated_header },
	{ "truncated-phdrs", truncated_phdrs },
	{ "bad-magic", bad_magic },
	{ "wrong-class", wrong_class },
	{ "big-endian", big_endian },
	{ "wrong-machine", wrong_machine },
	{ "et-dyn", et_dyn },
	{ "no-abi-note", no_abi_note },
	{ "wrong-abi-version", wrong_abi_version },
	{ "interp", interp },
	{ "filesz-gt-memsz", filesz_gt_memsz },
	{ "segment-past-eof", segment_past_eof },
	{ "reserved-area", reserved_area },
	{ "beyond-memory", beyond_memory },
	{ "wx-segment", wx_segment },
	{ "overlapping-segments", overlapping_segments },
	{ "bad-entry", bad_entry },
};

static void usage(void)
{
	fprintf(stderr, "usage: mkbadelf GUEST.elf OUTDIR | --synth FILE | --list\n");
	exit(2);
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--list") == 0) {
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
			puts(cases[i].name);
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "--synth") == 0) {
		static struct eb_image img;
		eb_build_default(&img);
		write_file(argv[2], img.bytes, img.len);
		return 0;
	}
	if (argc != 3 || argv[1][0] == '-')
		usage();

	struct guest g = { .path = argv[1] };
	g.bytes = read_file(g.path, &g.len);
	inspect(&g);
	if (mkdir(argv[2], 0755) != 0 && errno != EEXIST)
		die("cannot create %s: %s", argv[2], strerror(errno));

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct variant v = { .bytes = malloc(g.len), .len = g.len };
		if (!v.bytes)
			die("out of memory");
		memcpy(v.bytes, g.bytes, g.len);
		cases[i].make(&g, &v);
		char path[4096];
		if ((size_t)snprintf(path, sizeof(path), "%s/%s.elf", argv[2], cases[i].name) >= sizeof(path))
			die("output path too long");
		write_file(path, v.bytes, v.len);
		free(v.bytes);
	}
	free(g.bytes);
	return 0;
}

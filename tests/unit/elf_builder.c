/* SPDX-License-Identifier: ISC */
/* Valid cloak guest ELF images for tests; see elf_builder.h. */
#include "elf_builder.h"

#include <string.h>

uint8_t eb_pattern(unsigned salt, uint64_t i)
{
	/* Never 0 (so a zeroed byte is told apart) and differs by salt. */
	return (uint8_t)(1 + (i * 7 + salt * 101) % 255);
}

Elf64_Ehdr *eb_ehdr(struct eb_image *img)
{
	return (Elf64_Ehdr *)img->bytes;
}

Elf64_Phdr *eb_phdr(struct eb_image *img, unsigned index)
{
	return (Elf64_Phdr *)(img->bytes + sizeof(Elf64_Ehdr)) + index;
}

struct eb_note *eb_note(struct eb_image *img)
{
	return (struct eb_note *)(img->bytes + EB_NOTE_OFFSET);
}

static void set_phdr(struct eb_image *img, unsigned index, Elf64_Phdr ph)
{
	*eb_phdr(img, index) = ph;
}

void eb_build_default(struct eb_image *img)
{
	_Static_assert(sizeof(Elf64_Ehdr) + EB_MAX_PHDRS * sizeof(Elf64_Phdr) <= EB_NOTE_OFFSET,
		       "program headers run into the note");
	_Static_assert(sizeof(struct eb_note) == 28, "note layout");
	memset(img, 0, sizeof(*img));
	img->len = EB_LEN;

	Elf64_Ehdr *eh = eb_ehdr(img);
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_ident[EI_OSABI] = ELFOSABI_SYSV;
	eh->e_type = ET_EXEC;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_entry = EB_ENTRY;
	eh->e_phoff = sizeof(Elf64_Ehdr);
	eh->e_ehsize = sizeof(Elf64_Ehdr);
	eh->e_phentsize = sizeof(Elf64_Phdr);
	eh->e_phnum = EB_NPHDRS;
	eh->e_shentsize = sizeof(Elf64_Shdr);

	set_phdr(img, EB_PH_TEXT, (Elf64_Phdr){
		.p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = EB_TEXT_OFFSET,
		.p_vaddr = EB_TEXT_GPA, .p_paddr = EB_TEXT_GPA, .p_filesz = EB_TEXT_FILESZ,
		.p_memsz = EB_TEXT_FILESZ, .p_align = 0x1000 });
	set_phdr(img, EB_PH_DATA, (Elf64_Phdr){
		.p_type = PT_LOAD, .p_flags = PF_R | PF_W, .p_offset = EB_DATA_OFFSET,
		.p_vaddr = EB_DATA_GPA, .p_paddr = EB_DATA_GPA, .p_filesz = EB_DATA_FILESZ,
		.p_memsz = EB_DATA_MEMSZ, .p_align = 0x1000 });
	set_phdr(img, EB_PH_NOTE, (Elf64_Phdr){
		.p_type = PT_NOTE, .p_flags = PF_R, .p_offset = EB_NOTE_OFFSET,
		.p_filesz = sizeof(struct eb_note), .p_align = 4 });
	set_phdr(img, EB_PH_STACK, (Elf64_Phdr){
		.p_type = PT_GNU_STACK, .p_flags = PF_R | PF_W, .p_align = 16 });

	struct eb_note *note = eb_note(img);
	note->nh.n_namesz = sizeof(CLOAK_NOTE_NAME);
	note->nh.n_descsz = sizeof(struct cloak_note_abi);
	note->nh.n_type = CLOAK_NOTE_TYPE_ABI;
	memcpy(note->name, CLOAK_NOTE_NAME, sizeof(CLOAK_NOTE_NAME));
	note->desc.abi_version = CLOAK_ABI_VERSION;

	for (uint64_t i = 0; i < EB_TEXT_FILESZ; i++)
		img->bytes[EB_TEXT_OFFSET + i] = eb_pattern(1, i);
	for (uint64_t i = 0; i < EB_DATA_FILESZ; i++)
		img->bytes[EB_DATA_OFFSET + i] = eb_pattern(2, i);
}

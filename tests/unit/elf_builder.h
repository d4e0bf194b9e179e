/* SPDX-License-Identifier: ISC */
/*
 * Builds small, valid cloak guest ELF images in memory, for the ELF loader's
 * unit tests, mkbadelf --synth and the fuzz seed corpus. Tests mutate the
 * built image through eb_ehdr()/eb_phdr()/eb_note().
 *
 * Layout of the default image (file offsets -> guest addresses):
 *   0x0000  ELF header
 *   0x0040  program headers (EB_NPHDRS used, room for EB_MAX_PHDRS)
 *   0x0200  PT_NOTE: the CLOAK ABI note (4-byte aligned)
 *   0x1000  text, EB_TEXT_FILESZ bytes  -> EB_TEXT_GPA, R+X
 *   0x2000  data, EB_DATA_FILESZ bytes  -> EB_DATA_GPA, R+W, memsz
 *           EB_DATA_MEMSZ (the rest is BSS, crossing pages)
 * Text and data bytes follow eb_pattern() so a test can tell where each
 * byte came from.
 */
#ifndef CLOAK_TESTS_ELF_BUILDER_H
#define CLOAK_TESTS_ELF_BUILDER_H

#include <elf.h>
#include <stddef.h>
#include <stdint.h>

#include "cloak/abi.h"

#define EB_IMAGE_MAX 0x4000
#define EB_MAX_PHDRS 8

#define EB_NOTE_OFFSET 0x200
#define EB_TEXT_OFFSET 0x1000
#define EB_TEXT_GPA 0x200000ull
#define EB_TEXT_FILESZ 0x180ull
#define EB_ENTRY (EB_TEXT_GPA + 0x10)
#define EB_DATA_OFFSET 0x2000
#define EB_DATA_GPA 0x201000ull
#define EB_DATA_FILESZ 0x100ull
#define EB_DATA_MEMSZ 0x2100ull
#define EB_LEN (EB_DATA_OFFSET + EB_DATA_FILESZ)

/* Program header indices of the default image. */
enum { EB_PH_TEXT = 0, EB_PH_DATA = 1, EB_PH_NOTE = 2, EB_PH_STACK = 3, EB_NPHDRS = 4 };

struct eb_image {
	_Alignas(8) uint8_t bytes[EB_IMAGE_MAX];
	size_t len;
};

/* The CLOAK ABI note as laid out in the file: header, padded name, desc. */
struct eb_note {
	Elf64_Nhdr nh;
	char name[8]; /* "CLOAK\0" padded to 4 bytes */
	struct cloak_note_abi desc;
};

void eb_build_default(struct eb_image *img);
Elf64_Ehdr *eb_ehdr(struct eb_image *img);
Elf64_Phdr *eb_phdr(struct eb_image *img, unsigned index);
struct eb_note *eb_note(struct eb_image *img);
/* Byte i of the text (salt 1) or data (salt 2) payload. */
uint8_t eb_pattern(unsigned salt, uint64_t i);

#endif

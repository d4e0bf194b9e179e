/* SPDX-License-Identifier: ISC */
/* Architectural constants of x86-64 the monitor uses, by name. */
#ifndef CLOAK_X86_H
#define CLOAK_X86_H

/* Control registers and EFER. */
#define X86_CR0_PE (1ull << 0)
#define X86_CR0_MP (1ull << 1)
#define X86_CR0_ET (1ull << 4)
#define X86_CR0_NE (1ull << 5)
#define X86_CR0_WP (1ull << 16)
#define X86_CR0_AM (1ull << 18)
#define X86_CR0_PG (1ull << 31)
#define X86_CR4_PAE (1ull << 5)
#define X86_CR4_OSFXSR (1ull << 9)
#define X86_CR4_OSXMMEXCPT (1ull << 10)
#define X86_EFER_LME (1ull << 8)
#define X86_EFER_LMA (1ull << 10)
#define X86_EFER_NXE (1ull << 11)
#define X86_RFLAGS_RESERVED1 (1ull << 1) /* always set */

/* Segment descriptor types (the S=1 code/data ones, and the 64-bit TSS). */
#define X86_SEG_TYPE_DATA_RW_ACCESSED 3
#define X86_SEG_TYPE_CODE_XR_ACCESSED 11
#define X86_SEG_TYPE_TSS64_BUSY 11

/* Exception vectors. */
#define X86_VEC_DE 0
#define X86_VEC_DB 1
#define X86_VEC_NMI 2
#define X86_VEC_BP 3
#define X86_VEC_OF 4
#define X86_VEC_BR 5
#define X86_VEC_UD 6
#define X86_VEC_NM 7
#define X86_VEC_DF 8
#define X86_VEC_TS 10
#define X86_VEC_NP 11
#define X86_VEC_SS 12
#define X86_VEC_GP 13
#define X86_VEC_PF 14
#define X86_VEC_MF 16
#define X86_VEC_AC 17
#define X86_VEC_MC 18
#define X86_VEC_XM 19
#define X86_VEC_VE 20
#define X86_VEC_CP 21
#define X86_VEC_COUNT 32 /* vectors 0..31 are exceptions */

/* Page-fault error code bits. */
#define X86_PF_PRESENT (1ull << 0)
#define X86_PF_WRITE (1ull << 1)
#define X86_PF_USER (1ull << 2)
#define X86_PF_RSVD (1ull << 3)
#define X86_PF_FETCH (1ull << 4)

/* Page-table entry bits. */
#define X86_PTE_P (1ull << 0)
#define X86_PTE_W (1ull << 1)
#define X86_PTE_PS (1ull << 7)
#define X86_PTE_NX (1ull << 63)

#endif

/* SPDX-License-Identifier: ISC */
/*
 * Guest entry and CPU exception stubs. The monitor enters _start in 64-bit
 * long mode with %rdi = boot info; BSS is already zero (the loader zeroes
 * it on the host, where it is cheap), so nothing is cleared here.
 */

	.section .text.start, "ax"
	.globl _start
_start:
	lea	__stack_top(%rip), %rsp
	xor	%ebp, %ebp
	call	cloak_rt_start
1:	hlt
	jmp	1b

/* Exception stubs: push a zero error code where the CPU does not, then the
 * vector, and join the common path. */
	.section .text.traps, "ax"
.macro TRAP_NOERR n
	.globl cloak_rt_trap_\n
cloak_rt_trap_\n:
	pushq	$0
	pushq	$\n
	jmp	trap_common
.endm
.macro TRAP_ERR n
	.globl cloak_rt_trap_\n
cloak_rt_trap_\n:
	pushq	$\n
	jmp	trap_common
.endm
	TRAP_NOERR 0
	TRAP_NOERR 1
	TRAP_NOERR 2
	TRAP_NOERR 3
	TRAP_NOERR 4
	TRAP_NOERR 5
	TRAP_NOERR 6
	TRAP_NOERR 7
	TRAP_ERR 8
	TRAP_NOERR 9
	TRAP_ERR 10
	TRAP_ERR 11
	TRAP_ERR 12
	TRAP_ERR 13
	TRAP_ERR 14
	TRAP_NOERR 15
	TRAP_NOERR 16
	TRAP_ERR 17
	TRAP_NOERR 18
	TRAP_NOERR 19
	TRAP_NOERR 20
	TRAP_ERR 21
	TRAP_NOERR 22
	TRAP_NOERR 23
	TRAP_NOERR 24
	TRAP_NOERR 25
	TRAP_NOERR 26
	TRAP_NOERR 27
	TRAP_NOERR 28
	TRAP_ERR 29
	TRAP_ERR 30
	TRAP_NOERR 31

/* Frame at %rsp: vector, error code, rip, cs, rflags, rsp, ss. */
trap_common:
	mov	%rsp, %rdi
	and	$-16, %rsp
	call	cloak_rt_trap
2:	hlt
	jmp	2b

	.section .stack, "aw", @nobits
	.balign 4096
	.globl __stack_bottom
__stack_bottom:
	.skip	131072
__stack_top:

	.section .note.GNU-stack, "", @progbits

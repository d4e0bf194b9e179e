/* SPDX-License-Identifier: ISC */
/*
 * What Debian's prebuilt libbearssl.a expects from a hosted C library: it
 * was compiled with -fstack-protector-strong and _FORTIFY_SOURCE, so it
 * reads a stack canary at %fs:0x28 and calls __stack_chk_fail and the
 * checked __mem*_chk variants. The cloak runtime (freestanding) has none of
 * these, and its FS base is 0, where %fs:0x28 would hit the unmapped null
 * page. compat_init() gives FS a small block whose canary is random.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cloak/guest.h"
#include "compat.h"

void __stack_chk_fail(void);
void *__memcpy_chk(void *dst, const void *src, size_t n, size_t dstlen);
void *__memmove_chk(void *dst, const void *src, size_t n, size_t dstlen);
void *__memset_chk(void *dst, int c, size_t n, size_t dstlen);

#define MSR_FS_BASE 0xc0000100u

/* The layout glibc uses: the canary is the word at offset 0x28. */
static struct {
	uint64_t words[5];
	uint64_t canary;
} fs_block __attribute__((aligned(64)));

void compat_init(void)
{
	uint64_t c = 0;
	cloak_random(&c, sizeof c);
	/* A zero byte first, as glibc does, so string overruns stop at it. */
	fs_block.canary = c & ~0xffull;
	uint64_t base = (uint64_t)(uintptr_t)&fs_block;
	__asm__ volatile("wrmsr" : : "c"(MSR_FS_BASE), "a"((uint32_t)base),
			 "d"((uint32_t)(base >> 32)));
}

_Noreturn static void overflow(const char *what)
{
	cloak_abort_msg(what);
}

void __stack_chk_fail(void)
{
	overflow("stack smashing detected in a library");
}

void *__memcpy_chk(void *dst, const void *src, size_t n, size_t dstlen)
{
	if (n > dstlen)
		overflow("__memcpy_chk: buffer overflow");
	return memcpy(dst, src, n);
}

void *__memmove_chk(void *dst, const void *src, size_t n, size_t dstlen)
{
	if (n > dstlen)
		overflow("__memmove_chk: buffer overflow");
	return memmove(dst, src, n);
}

void *__memset_chk(void *dst, int c, size_t n, size_t dstlen)
{
	if (n > dstlen)
		overflow("__memset_chk: buffer overflow");
	return memset(dst, c, n);
}

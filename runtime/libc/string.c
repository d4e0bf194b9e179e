/* SPDX-License-Identifier: ISC */
/*
 * mem* and str* for the guest runtime.
 *
 * Guests run under an instruction emulator here (~640-800 ns per
 * instruction), where a `rep` string instruction costs about 1 us per
 * iteration whatever its width: measured in a guest, copying 4 KiB takes
 * 4.4 ms with `rep movsb`, 17 ms with a byte loop, 1.4 ms with an unrolled
 * qword loop and 0.54 ms with `rep movsq`. So bulk work is done 8 bytes per
 * iteration (rep movsq / stosq / cmpsq) with a `rep ...b` for the tail, and
 * the str* functions first find a length with one `repne scasb` and then
 * work on a known length. The direction flag is clear by the ABI; the
 * backward operations set it and clear it again in the same asm.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

static inline void copy_fwd(void *dst, const void *src, size_t n)
{
	size_t qwords = n >> 3;
	__asm__ volatile("rep movsq\n\t"
			 "mov %3, %%rcx\n\t"
			 "rep movsb"
			 : "+D"(dst), "+S"(src), "+c"(qwords)
			 : "r"(n & 7)
			 : "memory");
}

/* Byte compare that never reads past the first difference: what str*
 * need, where the buffers may end right after it. */
static inline int compare_bytes(const void *a, const void *b, size_t n)
{
	const unsigned char *pa = a, *pb = b;
	if (n == 0)
		return 0;
	__asm__ volatile("repe cmpsb" : "+S"(pa), "+D"(pb), "+c"(n) : : "memory", "cc");
	/* Stops after the first differing pair (or after n): that pair decides. */
	return pa[-1] - pb[-1];
}

/* Index of the first byte equal to c in s[0..n), or n. */
static inline size_t scan_fwd(const void *s, int c, size_t n)
{
	const unsigned char *p = s;
	size_t left = n;
	bool found;
	if (n == 0)
		return 0;
	__asm__ volatile("repne scasb"
			 : "+D"(p), "+c"(left), "=@ccz"(found)
			 : "a"(c)
			 : "memory");
	return found ? n - left - 1 : n;
}

void *memcpy(void *restrict dst, const void *restrict src, size_t n)
{
	copy_fwd(dst, src, n);
	return dst;
}

void *memmove(void *dst, const void *src, size_t n)
{
	/* Forward is safe unless dst starts inside [src, src + n). */
	if ((uintptr_t)dst - (uintptr_t)src >= n) {
		copy_fwd(dst, src, n);
	} else {
		/* Backwards: the odd tail bytes from the top, then qwords (each
		 * one read whole before it is written, so overlap by less than 8
		 * is fine too). */
		unsigned char *d = (unsigned char *)dst + n - 1;
		const unsigned char *s = (const unsigned char *)src + n - 1;
		size_t tail = n & 7;
		__asm__ volatile("std\n\t"
				 "rep movsb\n\t"
				 "sub $7, %%rsi\n\t"
				 "sub $7, %%rdi\n\t"
				 "mov %3, %%rcx\n\t"
				 "rep movsq\n\t"
				 "cld"
				 : "+D"(d), "+S"(s), "+c"(tail)
				 : "r"(n >> 3)
				 : "memory", "cc");
	}
	return dst;
}

void *memset(void *dst, int c, size_t n)
{
	void *d = dst;
	uint64_t pattern = (uint64_t)(unsigned char)c * 0x0101010101010101ull;
	size_t qwords = n >> 3;
	__asm__ volatile("rep stosq\n\t"
			 "mov %3, %%rcx\n\t"
			 "rep stosb"
			 : "+D"(d), "+c"(qwords)
			 : "a"(pattern), "r"(n & 7)
			 : "memory");
	return dst;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const unsigned char *pa = a, *pb = b;
	size_t qwords = n >> 3, tail = n & 7;
	if (qwords) {
		bool differ;
		__asm__ volatile("repe cmpsq"
				 : "+S"(pa), "+D"(pb), "+c"(qwords), "=@ccnz"(differ)
				 :
				 : "memory");
		if (differ) {
			/* Find the byte inside the qword that differs. */
			pa -= 8;
			pb -= 8;
			tail = 8;
		}
	}
	return compare_bytes(pa, pb, tail);
}

void *memchr(const void *s, int c, size_t n)
{
	size_t i = scan_fwd(s, c, n);
	return i < n ? (void *)((const unsigned char *)s + i) : NULL;
}

void *memrchr(const void *s, int c, size_t n)
{
	const unsigned char *p = (const unsigned char *)s + n - 1;
	bool found;
	if (n == 0)
		return NULL;
	__asm__ volatile("std\n\trepne scasb\n\tcld"
			 : "+D"(p), "+c"(n), "=@ccz"(found)
			 : "a"(c)
			 : "memory");
	return found ? (void *)(p + 1) : NULL;
}

size_t strlen(const char *s)
{
	size_t left = SIZE_MAX;
	__asm__ volatile("repne scasb" : "+D"(s), "+c"(left) : "a"(0) : "memory", "cc");
	/* The scan consumed strlen + 1 bytes. */
	return ~left - 1;
}

size_t strnlen(const char *s, size_t maxlen)
{
	return scan_fwd(s, 0, maxlen);
}

/* Comparing strlen(a) + 1 bytes is enough: the compare stops at the first
 * difference, which is at or before b's terminator, so b is never read
 * past its end. */
int strcmp(const char *a, const char *b)
{
	return compare_bytes(a, b, strlen(a) + 1);
}

int strncmp(const char *a, const char *b, size_t n)
{
	size_t len = strnlen(a, n);
	return compare_bytes(a, b, len < n ? len + 1 : n);
}

char *strchr(const char *s, int c)
{
	return memchr(s, c, strlen(s) + 1);
}

char *strrchr(const char *s, int c)
{
	return memrchr(s, c, strlen(s) + 1);
}

char *strstr(const char *haystack, const char *needle)
{
	size_t nlen = strlen(needle), hlen;
	const char *p = haystack;
	if (nlen == 0)
		return (char *)haystack;
	hlen = strlen(haystack);
	while (hlen >= nlen) {
		size_t skip = scan_fwd(p, (unsigned char)needle[0], hlen - nlen + 1);
		if (skip > hlen - nlen)
			return NULL;
		p += skip;
		hlen -= skip;
		if (memcmp(p, needle, nlen) == 0)
			return (char *)p;
		p++;
		hlen--;
	}
	return NULL;
}

/* A 256-bit set of the bytes in `set`, plus NUL when with_nul. */
static void byte_set(uint64_t bits[4], const char *set, bool with_nul)
{
	const unsigned char *p = (const unsigned char *)set;
	bits[0] = with_nul;
	bits[1] = bits[2] = bits[3] = 0;
	for (; *p; p++)
		bits[*p >> 6] |= 1ull << (*p & 63);
}

static size_t span(const char *s, const char *set, bool in_set)
{
	uint64_t bits[4];
	const unsigned char *p = (const unsigned char *)s;
	/* strcspn stops at NUL too: put NUL in its set. */
	byte_set(bits, set, !in_set);
	while (((bits[*p >> 6] >> (*p & 63)) & 1) == in_set)
		p++;
	return (size_t)(p - (const unsigned char *)s);
}

size_t strspn(const char *s, const char *accept)
{
	return span(s, accept, true);
}

size_t strcspn(const char *s, const char *reject)
{
	return span(s, reject, false);
}

char *strcpy(char *restrict dst, const char *restrict src)
{
	copy_fwd(dst, src, strlen(src) + 1);
	return dst;
}

char *strncpy(char *restrict dst, const char *restrict src, size_t n)
{
	size_t len = strnlen(src, n);
	copy_fwd(dst, src, len);
	memset(dst + len, 0, n - len);
	return dst;
}

char *strcat(char *restrict dst, const char *restrict src)
{
	strcpy(dst + strlen(dst), src);
	return dst;
}

char *strncat(char *restrict dst, const char *restrict src, size_t n)
{
	size_t len = strnlen(src, n);
	char *end = dst + strlen(dst);
	copy_fwd(end, src, len);
	end[len] = '\0';
	return dst;
}

/* SPDX-License-Identifier: ISC */
/*
 * <string.h> for cloak guests.
 *
 * Bulk operations are single x86 string instructions (rep movsb, rep stosb,
 * repe cmpsb, repne scasb): where KVM emulates guest code (kvm_pvm), one
 * string instruction costs far less than the equivalent loop; where the CPU
 * runs guest code (VMX/SVM), they cost no more than a loop.
 */
#ifndef CLOAK_RT_STRING_H
#define CLOAK_RT_STRING_H

#include <stddef.h>

void *memcpy(void *restrict dst, const void *restrict src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
void *memchr(const void *s, int c, size_t n);
void *memrchr(const void *s, int c, size_t n);

size_t strlen(const char *s);
size_t strnlen(const char *s, size_t maxlen);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);
char *strchr(const char *s, int c);
char *strrchr(const char *s, int c);
char *strstr(const char *haystack, const char *needle);
size_t strspn(const char *s, const char *accept);
size_t strcspn(const char *s, const char *reject);

char *strcpy(char *restrict dst, const char *restrict src);
/* C semantics: pads with NULs up to n and does not terminate a source of
 * n or more bytes. */
char *strncpy(char *restrict dst, const char *restrict src, size_t n);
char *strcat(char *restrict dst, const char *restrict src);
char *strncat(char *restrict dst, const char *restrict src, size_t n);

/* Allocate with malloc(); NULL when the heap is exhausted. */
char *strdup(const char *s);
char *strndup(const char *s, size_t n);

#endif

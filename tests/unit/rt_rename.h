/* SPDX-License-Identifier: ISC */
/*
 * Host builds of the guest runtime's libc (tests/unit/rt_libc.mk): the
 * runtime defines malloc, memcpy, snprintf, ... which would clash with
 * glibc's in a host test program. Every runtime source is compiled with
 * `-include tests/unit/rt_rename.h`, which renames them all to rt_NAME; the
 * test includes glibc's headers, then this file, then the runtime headers
 * (declaring rt_NAME), then this file again with RT_UNRENAME defined, so
 * that the test's own code calls glibc under the usual names and the
 * runtime under rt_ names.
 *
 * glibc may define some of these names as macros (ctype, fortified stdio,
 * errno): each is #undef'd first.
 */
#ifndef RT_UNRENAME
#undef memcpy
#define memcpy rt_memcpy
#undef memmove
#define memmove rt_memmove
#undef memset
#define memset rt_memset
#undef memcmp
#define memcmp rt_memcmp
#undef memchr
#define memchr rt_memchr
#undef memrchr
#define memrchr rt_memrchr
#undef strlen
#define strlen rt_strlen
#undef strnlen
#define strnlen rt_strnlen
#undef strcmp
#define strcmp rt_strcmp
#undef strncmp
#define strncmp rt_strncmp
#undef strchr
#define strchr rt_strchr
#undef strrchr
#define strrchr rt_strrchr
#undef strstr
#define strstr rt_strstr
#undef strspn
#define strspn rt_strspn
#undef strcspn
#define strcspn rt_strcspn
#undef strcpy
#define strcpy rt_strcpy
#undef strncpy
#define strncpy rt_strncpy
#undef strcat
#define strcat rt_strcat
#undef strncat
#define strncat rt_strncat
#undef strdup
#define strdup rt_strdup
#undef strndup
#define strndup rt_strndup
#undef malloc
#define malloc rt_malloc
#undef free
#define free rt_free
#undef calloc
#define calloc rt_calloc
#undef realloc
#define realloc rt_realloc
#undef aligned_alloc
#define aligned_alloc rt_aligned_alloc
#undef posix_memalign
#define posix_memalign rt_posix_memalign
#undef abort
#define abort rt_abort
#undef exit
#define exit rt_exit
#undef strtol
#define strtol rt_strtol
#undef strtoul
#define strtoul rt_strtoul
#undef strtoll
#define strtoll rt_strtoll
#undef strtoull
#define strtoull rt_strtoull
#undef atoi
#define atoi rt_atoi
#undef atol
#define atol rt_atol
#undef snprintf
#define snprintf rt_snprintf
#undef vsnprintf
#define vsnprintf rt_vsnprintf
#undef printf
#define printf rt_printf
#undef vprintf
#define vprintf rt_vprintf
#undef puts
#define puts rt_puts
#undef putchar
#define putchar rt_putchar
#undef errno
#define errno rt_errno
#undef isdigit
#define isdigit rt_isdigit
#undef islower
#define islower rt_islower
#undef isupper
#define isupper rt_isupper
#undef isalpha
#define isalpha rt_isalpha
#undef isalnum
#define isalnum rt_isalnum
#undef isxdigit
#define isxdigit rt_isxdigit
#undef isspace
#define isspace rt_isspace
#undef isprint
#define isprint rt_isprint
#undef isgraph
#define isgraph rt_isgraph
#undef iscntrl
#define iscntrl rt_iscntrl
#undef ispunct
#define ispunct rt_ispunct
#undef tolower
#define tolower rt_tolower
#undef toupper
#define toupper rt_toupper
/* Implemented by the runtime's abort path; the test supplies it. */
#define __cloak_assert_fail rt_cloak_assert_fail
#else /* RT_UNRENAME */
#undef memcpy
#undef memmove
#undef memset
#undef memcmp
#undef memchr
#undef memrchr
#undef strlen
#undef strnlen
#undef strcmp
#undef strncmp
#undef strchr
#undef strrchr
#undef strstr
#undef strspn
#undef strcspn
#undef strcpy
#undef strncpy
#undef strcat
#undef strncat
#undef strdup
#undef strndup
#undef malloc
#undef free
#undef calloc
#undef realloc
#undef aligned_alloc
#undef posix_memalign
#undef abort
#undef exit
#undef strtol
#undef strtoul
#undef strtoll
#undef strtoull
#undef atoi
#undef atol
#undef snprintf
#undef vsnprintf
#undef printf
#undef vprintf
#undef puts
#undef putchar
#undef errno
#undef isdigit
#undef islower
#undef isupper
#undef isalpha
#undef isalnum
#undef isxdigit
#undef isspace
#undef isprint
#undef isgraph
#undef iscntrl
#undef ispunct
#undef tolower
#undef toupper
#undef __cloak_assert_fail
#undef RT_UNRENAME
#endif

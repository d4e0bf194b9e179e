/* SPDX-License-Identifier: ISC */
/*
 * <assert.h> for cloak guests. No include guard: like the standard header,
 * each inclusion redefines assert() from the current NDEBUG.
 * __cloak_assert_fail() reports the failure to the monitor and ends the
 * guest; it is implemented by the runtime's abort path.
 */
#undef assert

_Noreturn void __cloak_assert_fail(const char *expr, const char *file, int line);

#ifdef NDEBUG
#define assert(expr) ((void)0)
#else
#define assert(expr) \
	(__builtin_expect(!!(expr), 1) ? (void)0 : __cloak_assert_fail(#expr, __FILE__, __LINE__))
#endif

#ifndef static_assert
#define static_assert _Static_assert
#endif

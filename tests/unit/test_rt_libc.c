/* SPDX-License-Identifier: ISC */
/*
 * Host tests of the guest runtime's string, formatting and number-parsing
 * code (runtime/libc/{string,printf,strtol}.c), compiled for the host with
 * every libc name renamed to rt_NAME. glibc is the oracle: each rt_
 * function is run side by side with glibc's on the same input, over fixed
 * tables and over seeded random inputs.
 */
#include "rt_libc_test.h"

#include <sys/mman.h>

/* malloc.c reports bad frees through this; strdup tests need no more. */
_Noreturn void rt_cloak_assert_fail(const char *expr, const char *file, int line)
{
	fail_msg("runtime assertion: %s (%s:%d)", expr, file, line);
	abort();
}

/* ------------------------------------------------------------------ */
/* Formatting                                                          */
/* ------------------------------------------------------------------ */

#define FMT_BUF 1024

/* Formats with the runtime and with glibc and insists on the same bytes
 * and the same return value. */
__attribute__((format(printf, 2, 3))) static void check_fmt(int line, const char *fmt, ...)
{
	char want[FMT_BUF], got[FMT_BUF];
	va_list ap, ap2;
	int rw, rg;

	va_start(ap, fmt);
	va_copy(ap2, ap);
	rw = vsnprintf(want, sizeof(want), fmt, ap);
	rg = rt_vsnprintf(got, sizeof(got), fmt, ap2);
	va_end(ap2);
	va_end(ap);
	if (rw != rg || rw < 0 || memcmp(want, got, (size_t)rw + 1 > FMT_BUF ? FMT_BUF : (size_t)rw + 1)) {
		fail_msg("line %d, format \"%s\": glibc gave %d \"%s\", runtime %d \"%s\"", line, fmt, rw,
			 want, rg, got);
	}
}
#define T(...) check_fmt(__LINE__, __VA_ARGS__)

/* Hides a format from the compiler's checks: for specs that are valid but
 * that gcc warns about (ignored flags, flags on %p, ...), which are the
 * corners most worth comparing. */
__attribute__((noinline)) static const char *unchecked(const char *fmt)
{
	return fmt;
}
#define TX(fmt, ...) check_fmt(__LINE__, unchecked(fmt), __VA_ARGS__)

static void test_format_table(void **state)
{
	const char *volatile null_str = NULL;
	void *volatile null_ptr = NULL;
	(void)state;

	T("plain text, no conversions");
	T("%d", 0);
	T("%d|%d|%d|%d", 1, -1, INT_MAX, INT_MIN);
	T("%i|%i", 12345, -12345);
	TX("[%5d][%-5d][%05d][%+d][% d][%+ d][% +d]", 42, 42, -42, 5, 5, 5, -5);
	TX("[%-05d][%+05d][% 05d][%0-5d]", 42, 42, 42, 42);
	TX("[%.3d][%.0d][%+.0d][% .0d][%8.3d][%-8.3d][%08.3d]", 7, 0, 0, 0, -7, -7, 7);
	TX("[%u][%u][%+u][% u]", 0u, UINT_MAX, 5u, 5u);
	T("[%x][%X][%#x][%#X][%#x][%#.0x][%#5.3x]", 0xdeadbeefu, 0xdeadbeefu, 255u, 255u, 0u, 0u, 0u);
	T("[%o][%#o][%#o][%#.0o][%#.3o][%#5o][%#o]", 0777u, 8u, 0u, 0u, 8u, 8u, 01234u);
	T("[%#10x][%#010x][%-#10x][%#-10X][%010X]", 255u, 255u, 255u, 255u, 0xabcu);
	TX("[%hhd][%hhd][%hhu][%hhx][%hho]", 300, -129, 257, 0x1ff, 0777);
	TX("[%hd][%hd][%hu][%hx]", 70000, -32769, 65537, 0x1ffff);
	T("[%ld][%ld][%lu][%lx][%lo]", LONG_MIN, LONG_MAX, ULONG_MAX, ULONG_MAX, ULONG_MAX);
	T("[%lld][%lld][%llu][%llX][%llo]", LLONG_MIN, LLONG_MAX, ULLONG_MAX, ULLONG_MAX, ULLONG_MAX);
	T("[%zu][%zd][%zx][%jd][%ju][%jx][%td][%tu][%tx]", SIZE_MAX, (ssize_t)-5, (size_t)0xabc,
	  INTMAX_MIN, UINTMAX_MAX, (uintmax_t)0xfeed, (ptrdiff_t)-9, (ptrdiff_t)77, (ptrdiff_t)-1);
	T("[%*d][%*d][%-*d][%.*d][%.*d][%*.*d][%-*.*d]", 10, 5, -10, 5, 10, 5, 5, 3, -1, 3, 8, 4, -3,
	  8, 4, -3);
	T("[%*s][%-*s][%.*s][%*.*s]", 6, "ab", 6, "ab", 3, "abcdef", 8, 2, "abcdef");
	T("[%c][%5c][%-5c][%c%c%c]", 'A', 'b', 'c', 'x', 'y', 'z');
	T("[%s][%10s][%-10s][%.2s][%10.2s][%.0s][%s][%.10s]", "hello", "hello", "hello", "hello",
	  "hello", "hello", "", "short");
	T("[%s][%10s][%-8s]", null_str, null_str, null_str);
	TX("[%p][%p][%20p][%-20p][%020p][%.20p][%+p][% p]", (void *)0x1234, (void *)&state,
	  (void *)0x1234, (void *)0x1234, (void *)0x1234, (void *)0x1234, (void *)0x1234,
	  (void *)0x1234);
	TX("[%p][%10p][%-10p][%010p]", null_ptr, null_ptr, null_ptr, null_ptr);
	TX("%%|a%%b|100%% sure: %d%%|%5%|%-5%|", 3);
	T("%s=%d (%#x) at %p, %c%c, %.3s|%-6u|%+lld", "key", -17, 0x2au, (void *)0xffff8000u, 'o', 'k',
	  "truncated", 12u, -99999999999ll);
	T("%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d", 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16);
	T("[%300d][%-300s][%.300d][%#.300o]", 1, "x", -5, 1u);
	T("long literal: 0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ "
	  "0123456789abcdefghijklmnopqrstuvwxyz %s", "end");
}

/* A byte NUL from %c is output like any other. */
static void test_format_nul_char(void **state)
{
	char buf[8];
	(void)state;
	memset(buf, 'z', sizeof(buf));
	assert_int_equal(rt_snprintf(buf, sizeof(buf), "a%cb", 0), 3);
	assert_memory_equal(buf, "a\0b\0zzzz", 8);
}

enum arg_kind { ARG_INT, ARG_64, ARG_STR, ARG_PTR };

static long long random_value(void)
{
	static const long long edges[] = {
		0, 1, -1, 7, 8, 9, 10, 15, 16, 255, 256, 32767, 32768, -32768, 65535, INT_MAX,
		INT_MIN, UINT_MAX, LLONG_MAX, LLONG_MIN, 1000000007, -999999999999ll,
	};
	switch (rng_below(3)) {
	case 0: return edges[rng_below(sizeof(edges) / sizeof(edges[0]))];
	case 1: return (long long)(rng() >> rng_below(64));
	default: return (long long)rng();
	}
}

/* Random conversion specs: flags, width and precision (as digits or '*'),
 * length modifiers, values from edge cases and random bit widths. */
static void test_format_random(void **state)
{
	static const char *const strs[] = { "", "a", "hello, world", "%d not a spec",
		"0123456789012345678901234567890123456789012345678901234567890123456789" };
	static const char *const lens[] = { "", "hh", "h", "l", "ll", "z", "j", "t" };
	(void)state;
	rng_seed(20261203);
	for (int iter = 0; iter < 40000; iter++) {
		char fmt[64], *f = fmt;
		const char conv = "diouxXcsp"[rng_below(9)];
		bool is_int = strchr("diouxX", conv) != NULL;
		int nstar = 0, stars[2] = { 0, 0 };
		enum arg_kind kind;
		long long v = random_value();
		const char *str = strs[rng_below(sizeof(strs) / sizeof(strs[0]))];
		const char *len = "";

		f += sprintf(f, "<");
		*f++ = '%';
		for (int i = (int)rng_below(4); i > 0; i--)
			*f++ = is_int || conv == 'p' ? "-+ #0"[rng_below(5)] : '-';
		switch (rng_below(6)) {
		case 0: case 1: case 2: break;
		case 3: case 4: f += sprintf(f, "%d", (int)rng_below(41)); break;
		default: *f++ = '*'; stars[nstar++] = (int)rng_below(81) - 40; break;
		}
		if (conv != 'c') {
			switch (rng_below(8)) {
			case 0: case 1: case 2: case 3: break;
			case 4: case 5: f += sprintf(f, ".%d", (int)rng_below(31)); break;
			case 6: *f++ = '.'; break;
			default: f += sprintf(f, ".*"); stars[nstar++] = (int)rng_below(36) - 5; break;
			}
		}
		if (is_int)
			len = lens[rng_below(8)];
		f += sprintf(f, "%s%c>", len, conv);
		*f = '\0';

		if (conv == 's')
			kind = ARG_STR;
		else if (conv == 'p')
			kind = ARG_PTR;
		else if (conv == 'c' || len[0] == '\0' || len[0] == 'h')
			kind = ARG_INT;
		else
			kind = ARG_64;

#define WITH_STARS(arg)                                                        \
	do {                                                                   \
		if (nstar == 0)                                                \
			check_fmt(iter, fmt, arg);                             \
		else if (nstar == 1)                                           \
			check_fmt(iter, fmt, stars[0], arg);                   \
		else                                                           \
			check_fmt(iter, fmt, stars[0], stars[1], arg);         \
	} while (0)
		switch (kind) {
		case ARG_INT: WITH_STARS((int)v); break;
		case ARG_64: WITH_STARS(v); break;
		case ARG_STR: WITH_STARS(str); break;
		case ARG_PTR: WITH_STARS((void *)(uintptr_t)v); break;
		}
#undef WITH_STARS
	}
}

/* Every buffer size from 0 to past the full length: same bytes written
 * (the rest of the buffer untouched), same would-be length returned. */
__attribute__((format(printf, 1, 2))) static void check_truncation(const char *fmt, ...)
{
	char want[128], got[128];
	va_list ap;
	int full;

	va_start(ap, fmt);
	full = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	assert_true(full >= 0 && full + 3 < (int)sizeof(want));
	for (size_t size = 0; size <= (size_t)full + 2; size++) {
		va_list a1, a2;
		int rw, rg;
		memset(want, 0x5a, sizeof(want));
		memset(got, 0x5a, sizeof(got));
		va_start(a1, fmt);
		va_copy(a2, a1);
		rw = vsnprintf(want, size, fmt, a1);
		rg = rt_vsnprintf(size ? got : NULL, size, fmt, a2);
		va_end(a2);
		va_end(a1);
		assert_int_equal(rg, full);
		assert_int_equal(rw, full);
		if (size)
			assert_memory_equal(got, want, sizeof(got));
		else
			assert_true(got[0] == 0x5a);
	}
}

static void test_format_truncation(void **state)
{
	(void)state;
	check_truncation("hello");
	check_truncation("%s, %s!", "hello", "world");
	check_truncation("[%-12d|%012x|%.7s|%+06d]", -3, 0xbeefu, "abcdefghijkl", 42);
	check_truncation("%40s", "right");
	check_truncation("%c", 'q');
	check_truncation("%s", "");
	assert_int_equal(rt_snprintf(NULL, 0, "%d items", 12345), 11);
}

/* What glibc cannot be asked: conversions the runtime refuses. */
static void test_format_unsupported(void **state)
{
	char buf[64];
	const char *volatile f;
	(void)state;

	/* Floating point, %n and wide conversions come out verbatim and take
	 * no argument: the 2 below lands in the second %d. */
	f = "%d %f %d";
	assert_int_equal(rt_snprintf(buf, sizeof(buf), f, 1, 2), 6);
	assert_string_equal(buf, "1 %f 2");
	f = "x%5.2fy%nz%Lg%ls%lc%a|";
	assert_int_equal(rt_snprintf(buf, sizeof(buf), f, 0), 22);
	assert_string_equal(buf, "x%5.2fy%nz%Lg%ls%lc%a|");
	/* A spec cut off by the end of the format is printed as is. */
	f = "50%";
	assert_int_equal(rt_snprintf(buf, sizeof(buf), f, 0), 3);
	assert_string_equal(buf, "50%");
	f = "abc%-08";
	assert_int_equal(rt_snprintf(buf, sizeof(buf), f, 0), 7);
	assert_string_equal(buf, "abc%-08");
}

struct collect {
	char buf[256];
	size_t len;
	unsigned calls;
	bool empty_call;
};

static void collect_out(void *ctx, const char *s, size_t n)
{
	struct collect *c = ctx;
	if (n == 0)
		c->empty_call = true;
	assert_true(c->len + n <= sizeof(c->buf));
	memcpy(c->buf + c->len, s, n);
	c->len += n;
	c->calls++;
}

static void test_format_callback(void **state)
{
	struct collect c = { .len = 0 };
	char want[256];
	int r;
	(void)state;

	r = cloak_format(collect_out, &c, "id=%u name=%-6s|%8.3x%%", 7u, "cat", 0x1fu);
	snprintf(want, sizeof(want), "id=%u name=%-6s|%8.3x%%", 7u, "cat", 0x1fu);
	assert_int_equal(r, (int)strlen(want));
	assert_int_equal(c.len, strlen(want));
	assert_memory_equal(c.buf, want, c.len);
	assert_false(c.empty_call);

	/* Few calls: a literal run is one piece, and a right-aligned number
	 * with its padding, sign and zeros is one more. */
	memset(&c, 0, sizeof(c));
	assert_int_equal(cloak_format(collect_out, &c, unchecked("just a literal run"), 0), 18);
	assert_int_equal(c.calls, 1);
	memset(&c, 0, sizeof(c));
	assert_int_equal(cloak_format(collect_out, &c, unchecked("v=%+08.4d"), 42), 10);
	assert_int_equal(c.calls, 2);
	assert_memory_equal(c.buf, "v=   +0042", 10);
}

static void count_out(void *ctx, const char *s, size_t n)
{
	(void)s;
	*(unsigned long long *)ctx += n;
}

/* Output past INT_MAX bytes: -1 with EOVERFLOW, and all of it still
 * went to the sink. */
static void test_format_overflow(void **state)
{
	unsigned long long n = 0;
	(void)state;
	rt_errno = 0;
	assert_int_equal(cloak_format(count_out, &n, unchecked("%*dx"), INT_MAX, 0), -1);
	assert_int_equal(rt_errno, EOVERFLOW);
	assert_true(n == (unsigned long long)INT_MAX + 1);
	n = 0;
	assert_int_equal(cloak_format(count_out, &n, "%*d", INT_MAX, 0), INT_MAX);
}

/* ------------------------------------------------------------------ */
/* Strings                                                             */
/* ------------------------------------------------------------------ */

/* Random bytes from a small alphabet (so that searches hit), sometimes
 * with bytes >= 0x80 (so that signedness shows). */
static void random_bytes(unsigned char *p, size_t n, bool allow_nul)
{
	static const unsigned char alphabet[] = { 'a', 'b', 'c', 0x80, 0xff, 'a', 'b', 0 };
	size_t k = allow_nul ? sizeof(alphabet) : sizeof(alphabet) - 1;
	for (size_t i = 0; i < n; i++)
		p[i] = alphabet[rng_below(k)];
}

static void random_cstr(char *p, size_t max)
{
	size_t n = rng_below(max);
	random_bytes((unsigned char *)p, n, false);
	p[n] = '\0';
}

static int sign(int x)
{
	return (x > 0) - (x < 0);
}

static void test_mem_random(void **state)
{
	enum { N = 600 };
	static unsigned char a[N], b[N], src[N];
	(void)state;
	rng_seed(1);
	for (int iter = 0; iter < 20000; iter++) {
		size_t off = rng_below(64), off2 = rng_below(64), n = rng_below(N - 128);
		int c = (int)rng_below(600) - 100;
		random_bytes(src, N, true);
		random_bytes(a, N, true);
		memcpy(b, a, N);

		assert_ptr_equal(rt_memcpy(a + off, src + off2, n), a + off);
		memcpy(b + off, src + off2, n);
		assert_memory_equal(a, b, N);

		assert_ptr_equal(rt_memmove(a + off, a + off2, n), a + off);
		memmove(b + off, b + off2, n);
		assert_memory_equal(a, b, N);

		assert_ptr_equal(rt_memset(a + off, c, n), a + off);
		memset(b + off, c, n);
		assert_memory_equal(a, b, N);

		random_bytes(a, N, true);
		memcpy(b, a, N);
		if (n && rng_below(2))
			b[off + rng_below(n)] ^= (unsigned char)(1 + rng_below(255));
		assert_int_equal(sign(rt_memcmp(a + off, b + off, n)), sign(memcmp(a + off, b + off, n)));

		assert_ptr_equal(rt_memchr(a + off, c, n), memchr(a + off, c, n));
		assert_ptr_equal(rt_memrchr(a + off, c, n), memrchr(a + off, c, n));
	}
}

/* memmove over a megabyte, overlapping by one byte and by most of it, in
 * both directions. */
static void test_memmove_large_overlap(void **state)
{
	const size_t n = 1 << 20;
	static const size_t shifts[] = { 1, 7, 4096, (1 << 20) - 1 };
	unsigned char *a = malloc(3 * n), *b = malloc(3 * n);
	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	rng_seed(2);
	for (size_t i = 0; i < sizeof(shifts) / sizeof(shifts[0]); i++) {
		for (int dir = 0; dir < 2; dir++) {
			unsigned char *sa = a + n, *da = dir ? sa + shifts[i] : sa - shifts[i];
			random_bytes(a, 3 * n, true);
			memcpy(b, a, 3 * n);
			rt_memmove(da, sa, n);
			memmove(b + (da - a), b + n, n);
			assert_memory_equal(a, b, 3 * n);
		}
	}
	free(a);
	free(b);
}

static void test_str_random(void **state)
{
	enum { N = 200 };
	static char s1[N + 1], s2[N + 1], d1[3 * N + 8], d2[3 * N + 8];
	(void)state;
	rng_seed(3);
	for (int iter = 0; iter < 20000; iter++) {
		size_t max = rng_below(N + 1), n;
		int c = (int)rng_below(3) == 0 ? 0 : (int)(signed char)"abc\x80"[rng_below(4)];

		random_cstr(s1, N);
		/* s2: often a copy of s1 with a change, sometimes a prefix. */
		memcpy(s2, s1, N + 1);
		switch (rng_below(4)) {
		case 0: random_cstr(s2, N); break;
		case 1: s2[rng_below(strlen(s1) + 1)] = '\0'; break;
		case 2:
			if (strlen(s1))
				s2[rng_below(strlen(s1))] = (char)(0x80 | rng_below(128));
			break;
		default: break;
		}

		assert_int_equal(rt_strlen(s1), strlen(s1));
		assert_int_equal(rt_strnlen(s1, max), strnlen(s1, max));
		assert_int_equal(sign(rt_strcmp(s1, s2)), sign(strcmp(s1, s2)));
		assert_int_equal(sign(rt_strncmp(s1, s2, max)), sign(strncmp(s1, s2, max)));
		assert_ptr_equal(rt_strchr(s1, c), strchr(s1, c));
		assert_ptr_equal(rt_strchr(s1, c + 256), strchr(s1, c + 256));
		assert_ptr_equal(rt_strrchr(s1, c), strrchr(s1, c));

		/* Needles: a piece of the haystack, or random. */
		if (rng_below(2) && strlen(s1)) {
			size_t at = rng_below(strlen(s1)), len = rng_below(strlen(s1) - at + 1);
			memcpy(s2, s1 + at, len);
			s2[len] = '\0';
		} else {
			random_cstr(s2, 6);
		}
		assert_ptr_equal(rt_strstr(s1, s2), strstr(s1, s2));
		assert_int_equal(rt_strspn(s1, s2), strspn(s1, s2));
		assert_int_equal(rt_strcspn(s1, s2), strcspn(s1, s2));

		n = rng_below(N + 20);
		memset(d1, 0x5a, sizeof(d1));
		memset(d2, 0x5a, sizeof(d2));
		assert_ptr_equal(rt_strcpy(d1, s1), d1);
		strcpy(d2, s1);
		assert_memory_equal(d1, d2, sizeof(d1));
		assert_ptr_equal(rt_strcat(d1, s2), d1);
		strcat(d2, s2);
		assert_memory_equal(d1, d2, sizeof(d1));
		assert_ptr_equal(rt_strncat(d1, s1, n), d1);
		strncat(d2, s1, n);
		assert_memory_equal(d1, d2, sizeof(d1));
		assert_ptr_equal(rt_strncpy(d1, s2, n), d1);
		strncpy(d2, s2, n);
		assert_memory_equal(d1, d2, sizeof(d1));
	}
}

static void test_str_edges(void **state)
{
	char buf[16] = "xxxxxxxxxxxxxxx";
	(void)state;
	assert_ptr_equal(rt_memchr(buf, 'x', 0), NULL);
	assert_ptr_equal(rt_memrchr(buf, 'x', 0), NULL);
	assert_int_equal(rt_memcmp("a", "b", 0), 0);
	assert_int_equal(rt_strlen(""), 0);
	assert_true(rt_strcmp("", "a") < 0);
	assert_true(rt_strcmp("\xff", "a") > 0); /* unsigned comparison */
	assert_int_equal(rt_strncmp("abc", "abd", 2), 0);
	assert_int_equal(rt_strncmp("abc", "xyz", 0), 0);
	const char *s = "hello";
	assert_ptr_equal(rt_strstr(s, ""), s);
	assert_ptr_equal(rt_strstr(s, "hello!"), NULL);
	assert_ptr_equal(rt_strchr(s, '\0'), s + 5);
	assert_ptr_equal(rt_strrchr(s, 'l'), s + 3);
	/* strncpy of a long source: n bytes, no terminator. */
	memset(buf, 'z', sizeof(buf));
	rt_strncpy(buf, "abcdef", 3);
	assert_memory_equal(buf, "abczzz", 6);
}

static void *map_zeroed(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(p != MAP_FAILED);
	return p;
}

static void test_strdup(void **state)
{
	const size_t len = 1 << 20;
	char *heap_area = map_zeroed(len), *p;
	(void)state;
	cloak_heap_init(heap_area, heap_area + len);
	p = rt_strdup("duplicate me");
	assert_non_null(p);
	assert_string_equal(p, "duplicate me");
	assert_true(p >= heap_area && p < heap_area + len);
	rt_free(p);
	p = rt_strndup("abcdef", 3);
	assert_string_equal(p, "abc");
	rt_free(p);
	p = rt_strndup("ab", 10);
	assert_string_equal(p, "ab");
	rt_free(p);
	munmap(heap_area, len);
}

/* ------------------------------------------------------------------ */
/* Number parsing                                                      */
/* ------------------------------------------------------------------ */

static void check_strto(const char *s, int base)
{
	char *e1, *e2;
	int err1, err2;
	char what[160];
	bool valid_base = base == 0 || (base >= 2 && base <= 36);
	snprintf(what, sizeof(what), "\"%s\" base %d", s, base);

#define COMPARE(fn)                                                                     \
	do {                                                                            \
		host_errno = 0;                                                         \
		rt_errno = 0;                                                           \
		__typeof__(fn(s, &e1, base)) want = fn(s, &e1, base);                   \
		err1 = host_errno;                                                      \
		__typeof__(want) got = rt_##fn(s, &e2, base);                           \
		err2 = rt_errno;                                                        \
		/* glibc leaves *end alone for a bad base */                    \
		if (want != got || err1 != err2 || (valid_base && e1 != e2))            \
			fail_msg("%s(%s): glibc %lld end+%td errno %d, runtime %lld end+%td errno %d", \
				 #fn, what, (long long)want, e1 - s, err1, (long long)got,     \
				 e2 - s, err2);                                          \
	} while (0)
	COMPARE(strtol);
	COMPARE(strtoul);
	COMPARE(strtoll);
	COMPARE(strtoull);
#undef COMPARE
}

static void test_strtol(void **state)
{
	static const char *const inputs[] = {
		"0", "123", "-123", "+7", "  42abc", "\t\n -0x1F", "0x", "0xg", "0X1f", "017", "08",
		"z", "", "-", "+", " ", "9223372036854775807", "9223372036854775808",
		"-9223372036854775808", "-9223372036854775809", "18446744073709551615",
		"18446744073709551616", "-18446744073709551615", "-18446744073709551616", "-1",
		"99999999999999999999999", "zz", "ZZ9", "1010", "0b101", "777", "  +0x", "0x7fffffffffffffff",
		"0xffffffffffffffff", "0x10000000000000000", "-0", "00000000000000000000000000042",
	};
	static const int bases[] = { 0, 2, 8, 10, 16, 36, 1, 37, -1 };
	(void)state;
	for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++)
		for (size_t j = 0; j < sizeof(bases) / sizeof(bases[0]); j++)
			check_strto(inputs[i], bases[j]);

	rng_seed(4);
	for (int iter = 0; iter < 20000; iter++) {
		static const char alphabet[] = " \t+-0123456789abcdefxXzZ";
		char s[32];
		size_t n = rng_below(sizeof(s) - 1);
		for (size_t k = 0; k < n; k++)
			s[k] = alphabet[rng_below(sizeof(alphabet) - 1)];
		s[n] = '\0';
		check_strto(s, (int)"\0\2\10\12\20\44"[rng_below(6)]);
	}
	assert_int_equal(rt_atoi("  -42x"), -42);
	assert_int_equal(rt_atol("9000000000"), 9000000000l);
}

static void test_ctype(void **state)
{
	(void)state;
	for (int c = -1; c < 256; c++) {
#define SAME(fn) assert_int_equal(!!rt_##fn(c), !!fn(c))
		SAME(isdigit);
		SAME(islower);
		SAME(isupper);
		SAME(isalpha);
		SAME(isalnum);
		SAME(isxdigit);
		SAME(isspace);
		SAME(isprint);
		SAME(isgraph);
		SAME(iscntrl);
		SAME(ispunct);
#undef SAME
		assert_int_equal(rt_tolower(c), tolower(c));
		assert_int_equal(rt_toupper(c), toupper(c));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format_table),
		cmocka_unit_test(test_format_nul_char),
		cmocka_unit_test(test_format_random),
		cmocka_unit_test(test_format_truncation),
		cmocka_unit_test(test_format_unsupported),
		cmocka_unit_test(test_format_callback),
		cmocka_unit_test(test_format_overflow),
		cmocka_unit_test(test_mem_random),
		cmocka_unit_test(test_memmove_large_overlap),
		cmocka_unit_test(test_str_random),
		cmocka_unit_test(test_str_edges),
		cmocka_unit_test(test_strdup),
		cmocka_unit_test(test_strtol),
		cmocka_unit_test(test_ctype),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

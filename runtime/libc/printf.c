/* SPDX-License-Identifier: ISC */
/*
 * The runtime's printf engine (cloak_vformat) and the buffer-backed
 * snprintf/vsnprintf built on it. Console printf lives with the console.
 *
 * Written for an emulated CPU where each instruction costs ~640 ns: literal
 * text between conversions is found with one memchr (a single `repne
 * scasb`) and handed out as one piece; a converted number is assembled
 * (sign, prefix, zeros, digits) in one small buffer and handed out once.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cloak/format.h>

enum {
	F_LEFT = 1,  /* '-' */
	F_PLUS = 2,  /* '+' */
	F_SPACE = 4, /* ' ' */
	F_ALT = 8,   /* '#' */
	F_ZERO = 16, /* '0' */
};

enum length { LEN_NONE, LEN_HH, LEN_H, LEN_L, LEN_LL, LEN_Z, LEN_J, LEN_T };

struct spec {
	unsigned flags;
	size_t width;
	long prec; /* < 0: none given */
	enum length len;
};

struct sink {
	cloak_format_out_fn *out;
	void *ctx;
	size_t total;
};

static void emit(struct sink *k, const char *s, size_t n)
{
	if (n) {
		k->out(k->ctx, s, n);
		k->total += n;
	}
}

static void pad(struct sink *k, char c, size_t n)
{
	static const char spaces[32] = "                                ";
	static const char zeros[32] = "00000000000000000000000000000000";
	const char *src = c == ' ' ? spaces : zeros;
	while (n) {
		size_t m = n < sizeof(spaces) ? n : sizeof(spaces);
		emit(k, src, m);
		n -= m;
	}
}

/* Width padding around a body that is already complete. */
static void field(struct sink *k, const struct spec *sp, const char *s, size_t n)
{
	size_t fill = sp->width > n ? sp->width - n : 0;
	if (!(sp->flags & F_LEFT))
		pad(k, ' ', fill);
	emit(k, s, n);
	if (sp->flags & F_LEFT)
		pad(k, ' ', fill);
}

/* Reads a decimal field width/precision; saturates at INT_MAX. */
static size_t read_num(const char **pp)
{
	const char *p = *pp;
	size_t v = 0;
	while ((unsigned)(*p - '0') < 10) {
		v = v * 10 + (size_t)(*p++ - '0');
		if (v > INT_MAX)
			v = INT_MAX;
	}
	*pp = p;
	return v;
}

static unsigned long long get_unsigned(va_list *ap, enum length len)
{
	switch (len) {
	case LEN_HH: return (unsigned char)va_arg(*ap, unsigned);
	case LEN_H: return (unsigned short)va_arg(*ap, unsigned);
	case LEN_L: return va_arg(*ap, unsigned long);
	case LEN_LL: return va_arg(*ap, unsigned long long);
	case LEN_Z: return va_arg(*ap, size_t);
	case LEN_J: return va_arg(*ap, uintmax_t);
	case LEN_T: return (unsigned long long)va_arg(*ap, ptrdiff_t);
	default: return va_arg(*ap, unsigned);
	}
}

static long long get_signed(va_list *ap, enum length len)
{
	switch (len) {
	case LEN_HH: return (signed char)va_arg(*ap, int);
	case LEN_H: return (short)va_arg(*ap, int);
	case LEN_L: return va_arg(*ap, long);
	case LEN_LL: return va_arg(*ap, long long);
	case LEN_Z: return (long long)va_arg(*ap, size_t); /* signed size_t */
	case LEN_J: return va_arg(*ap, intmax_t);
	case LEN_T: return va_arg(*ap, ptrdiff_t);
	default: return va_arg(*ap, int);
	}
}

static const char digit_pairs[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

/*
 * One integer conversion. `sign` is "", "-", "+" or " "; base 8, 10 or 16;
 * `upper` picks X digits. Layout: [spaces][sign][0x][zeros][digits][spaces].
 */
static void number(struct sink *k, const struct spec *sp, unsigned long long v, const char *sign,
		   unsigned base, bool upper)
{
	/* 22 octal digits for 2^64, then room for short zero and space runs. */
	char buf[64];
	char *end = buf + sizeof(buf), *p = end;
	const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	size_t ndig, zeros = 0, plen, body;
	bool nonzero = v != 0;
	char prefix[3]; /* sign and 0x: %+p has both */

	if (base == 10) {
		/* Two digits per division: each instruction counts here. */
		for (; v >= 100; v /= 100) {
			p -= 2;
			__builtin_memcpy(p, &digit_pairs[(v % 100) * 2], 2); /* two movs */
		}
		if (v >= 10) {
			p -= 2;
			__builtin_memcpy(p, &digit_pairs[v * 2], 2);
		} else if (v) {
			*--p = (char)('0' + v);
		}
	} else if (base == 16) {
		for (; v; v >>= 4)
			*--p = digits[v & 15];
	} else {
		for (; v; v >>= 3)
			*--p = (char)('0' + (v & 7));
	}
	ndig = (size_t)(end - p);
	/* Zero prints one digit unless the precision is 0. */
	if (ndig == 0 && sp->prec != 0) {
		*--p = '0';
		ndig = 1;
	}
	if (sp->prec >= 0 && (size_t)sp->prec > ndig)
		zeros = (size_t)sp->prec - ndig;
	/* '#' with 'o': the first digit must be 0. */
	if (base == 8 && (sp->flags & F_ALT) && zeros == 0 && (ndig == 0 || *p != '0'))
		zeros = 1;

	plen = 0;
	if (*sign)
		prefix[plen++] = *sign;
	if (base == 16 && (sp->flags & F_ALT) && nonzero) {
		prefix[plen++] = '0';
		prefix[plen++] = upper ? 'X' : 'x';
	}
	body = plen + zeros + ndig;
	if ((sp->flags & (F_ZERO | F_LEFT)) == F_ZERO && sp->prec < 0 && sp->width > body) {
		zeros += sp->width - body;
		body = sp->width;
	}

	if (zeros + plen <= (size_t)(p - buf)) {
		/* The common case: the body fits the buffer, and so does the
		 * padding of a right-aligned field: one piece for `out`. */
		p -= zeros;
		if (zeros)
			memset(p, '0', zeros);
		while (plen)
			*--p = prefix[--plen];
		if (!(sp->flags & F_LEFT) && sp->width > body && sp->width - body <= (size_t)(p - buf)) {
			p -= sp->width - body;
			memset(p, ' ', sp->width - body);
			body = sp->width;
		}
		field(k, sp, p, body);
		return;
	}
	if (!(sp->flags & F_LEFT) && sp->width > body)
		pad(k, ' ', sp->width - body);
	emit(k, prefix, plen);
	pad(k, '0', zeros);
	emit(k, p, ndig);
	if ((sp->flags & F_LEFT) && sp->width > body)
		pad(k, ' ', sp->width - body);
}

static void string(struct sink *k, const struct spec *sp, const char *s)
{
	size_t n;
	if (!s)
		s = "(null)";
	/* With a precision the array need not be terminated: look no further. */
	n = sp->prec >= 0 ? strnlen(s, (size_t)sp->prec) : strlen(s);
	field(k, sp, s, n);
}

int cloak_vformat(cloak_format_out_fn *out, void *ctx, const char *fmt, va_list ap_in)
{
	struct sink k = { out, ctx, 0 };
	const char *p = fmt, *end = fmt + strlen(fmt);
	va_list ap;

	va_copy(ap, ap_in);
	while (p < end) {
		const char *pct = memchr(p, '%', (size_t)(end - p));
		struct spec sp = { 0, 0, -1, LEN_NONE };
		unsigned long long u;
		long long s;
		char c;

		if (!pct) {
			emit(&k, p, (size_t)(end - p));
			break;
		}
		emit(&k, p, (size_t)(pct - p));
		p = pct + 1;

		for (;; p++) {
			if (*p == '-') sp.flags |= F_LEFT;
			else if (*p == '+') sp.flags |= F_PLUS;
			else if (*p == ' ') sp.flags |= F_SPACE;
			else if (*p == '#') sp.flags |= F_ALT;
			else if (*p == '0') sp.flags |= F_ZERO;
			else break;
		}
		if (*p == '*') {
			int w = va_arg(ap, int);
			p++;
			if (w < 0) {
				sp.flags |= F_LEFT;
				sp.width = (size_t)0 - (size_t)(long)w;
			} else {
				sp.width = (size_t)w;
			}
		} else {
			sp.width = read_num(&p);
		}
		if (*p == '.') {
			p++;
			if (*p == '*') {
				int pr = va_arg(ap, int);
				p++;
				sp.prec = pr < 0 ? -1 : pr;
			} else {
				sp.prec = (long)read_num(&p);
			}
		}
		switch (*p) {
		case 'h':
			sp.len = p[1] == 'h' ? LEN_HH : LEN_H;
			p += sp.len == LEN_HH ? 2 : 1;
			break;
		case 'l':
			sp.len = p[1] == 'l' ? LEN_LL : LEN_L;
			p += sp.len == LEN_LL ? 2 : 1;
			break;
		case 'z': sp.len = LEN_Z; p++; break;
		case 'j': sp.len = LEN_J; p++; break;
		case 't': sp.len = LEN_T; p++; break;
		default: break;
		}

		switch (*p) {
		case 'd':
		case 'i':
			s = get_signed(&ap, sp.len);
			u = s < 0 ? 0 - (unsigned long long)s : (unsigned long long)s;
			number(&k, &sp, u,
			       s < 0 ? "-" : (sp.flags & F_PLUS) ? "+" : (sp.flags & F_SPACE) ? " " : "", 10,
			       false);
			break;
		case 'u':
			number(&k, &sp, get_unsigned(&ap, sp.len), "", 10, false);
			break;
		case 'o':
			number(&k, &sp, get_unsigned(&ap, sp.len), "", 8, false);
			break;
		case 'x':
		case 'X':
			number(&k, &sp, get_unsigned(&ap, sp.len), "", 16, *p == 'X');
			break;
		case 'p':
			u = (uintptr_t)va_arg(ap, void *);
			if (!u) {
				sp.prec = -1;
				string(&k, &sp, "(nil)");
			} else {
				/* As glibc: %#lx, and '+'/' ' still apply. */
				sp.flags |= F_ALT;
				number(&k, &sp, u, (sp.flags & F_PLUS) ? "+" : (sp.flags & F_SPACE) ? " " : "",
				       16, false);
			}
			break;
		case 'c':
			if (sp.len != LEN_NONE)
				goto verbatim; /* wide characters: not supported */
			c = (char)va_arg(ap, int);
			field(&k, &sp, &c, 1);
			break;
		case 's':
			if (sp.len != LEN_NONE)
				goto verbatim;
			string(&k, &sp, va_arg(ap, const char *));
			break;
		case '%':
			emit(&k, "%", 1);
			break;
		case '\0':
			/* A lone '%' (or a cut spec) at the end: print what is there. */
			emit(&k, pct, (size_t)(p - pct));
			goto done;
		default:
		verbatim:
			/* Floating point, %n and anything unknown: shown, not
			 * interpreted, and no argument is consumed. */
			emit(&k, pct, (size_t)(p + 1 - pct));
			break;
		}
		p++;
	}
done:
	va_end(ap);
	if (k.total > INT_MAX) {
		errno = EOVERFLOW;
		return -1;
	}
	return (int)k.total;
}

int cloak_format(cloak_format_out_fn *out, void *ctx, const char *fmt, ...)
{
	va_list ap;
	int r;
	va_start(ap, fmt);
	r = cloak_vformat(out, ctx, fmt, ap);
	va_end(ap);
	return r;
}

/* The snprintf sink: copies what fits, remembers how much it copied. */
struct buf_sink {
	char *buf;
	size_t room; /* bytes available before the terminating NUL */
	size_t used;
};

static void buf_out(void *ctx, const char *s, size_t n)
{
	struct buf_sink *b = ctx;
	size_t left = b->room - b->used;
	if (n > left)
		n = left;
	if (n) { /* buf may be NULL when size is 0 */
		memcpy(b->buf + b->used, s, n);
		b->used += n;
	}
}

int vsnprintf(char *restrict buf, size_t size, const char *restrict fmt, va_list ap)
{
	struct buf_sink b = { buf, size ? size - 1 : 0, 0 };
	int r = cloak_vformat(buf_out, &b, fmt, ap);
	if (size)
		buf[b.used] = '\0';
	return r;
}

int snprintf(char *restrict buf, size_t size, const char *restrict fmt, ...)
{
	va_list ap;
	int r;
	va_start(ap, fmt);
	r = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return r;
}

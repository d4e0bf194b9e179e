/* SPDX-License-Identifier: ISC */
/*
 * strtol family for the guest runtime ("C" locale, ASCII).
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>

_Static_assert(sizeof(long) == sizeof(long long), "LP64: long is 64 bits");

static int digit_value(int c)
{
	if (isdigit(c))
		return c - '0';
	c |= 32;
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 10;
	return 99;
}

/*
 * Parses [space][sign][prefix]digits in `base` and returns the magnitude,
 * saturated at ULLONG_MAX (*overflow set). *end gets the first unparsed
 * byte, or s itself when there were no digits.
 */
static unsigned long long parse(const char *s, char **end, int base, bool *neg, bool *overflow)
{
	const char *p = s;
	unsigned long long v = 0;
	bool any = false;

	*neg = false;
	*overflow = false;
	if (base < 0 || base == 1 || base > 36) {
		errno = EINVAL;
		if (end)
			*end = (char *)s;
		return 0;
	}
	while (isspace((unsigned char)*p))
		p++;
	if (*p == '-' || *p == '+')
		*neg = *p++ == '-';
	/* A "0x" counts as a prefix only when a hex digit follows: "0xg"
	 * parses as 0 with the end at 'x'. */
	if ((base == 0 || base == 16) && p[0] == '0' && (p[1] | 32) == 'x' &&
	    digit_value((unsigned char)p[2]) < 16) {
		p += 2;
		base = 16;
	} else if (base == 0) {
		base = p[0] == '0' ? 8 : 10;
	}
	for (;; p++) {
		unsigned d = (unsigned)digit_value((unsigned char)*p);
		if (d >= (unsigned)base)
			break;
		any = true;
		if (v > (ULLONG_MAX - d) / (unsigned)base)
			*overflow = true;
		else
			v = v * (unsigned)base + d;
	}
	if (end)
		*end = (char *)(any ? p : s);
	return *overflow ? ULLONG_MAX : v;
}

unsigned long long strtoull(const char *restrict s, char **restrict end, int base)
{
	bool neg, overflow;
	unsigned long long v = parse(s, end, base, &neg, &overflow);
	if (overflow) {
		errno = ERANGE;
		return ULLONG_MAX;
	}
	return neg ? 0 - v : v;
}

long long strtoll(const char *restrict s, char **restrict end, int base)
{
	bool neg, overflow;
	unsigned long long v = parse(s, end, base, &neg, &overflow);
	unsigned long long limit = neg ? (unsigned long long)LLONG_MAX + 1 : LLONG_MAX;
	if (overflow || v > limit) {
		errno = ERANGE;
		return neg ? LLONG_MIN : LLONG_MAX;
	}
	return neg ? (long long)(0 - v) : (long long)v;
}

unsigned long strtoul(const char *restrict s, char **restrict end, int base)
{
	return strtoull(s, end, base);
}

long strtol(const char *restrict s, char **restrict end, int base)
{
	return strtoll(s, end, base);
}

int atoi(const char *s)
{
	return (int)strtol(s, NULL, 10);
}

long atol(const char *s)
{
	return strtol(s, NULL, 10);
}

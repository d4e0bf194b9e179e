/* SPDX-License-Identifier: ISC */
/* Filters for guest bytes; see text.h. */
#include "text.h"

#include <stdint.h>

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if invalid;
 * *cp gets the code point. Overlong forms and surrogates are invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n, uint32_t *cp)
{
	unsigned char c = s[0];
	size_t len;
	uint32_t v, min;
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2, v = c & 0x1f, min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3, v = c & 0x0f, min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4, v = c & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return len;
}

void text_for_terminal(char *s, size_t n)
{
	unsigned char *p = (unsigned char *)s;
	for (size_t i = 0; i < n;) {
		uint32_t cp = 0;
		size_t len = utf8_seq(p + i, n - i, &cp);
		int control = cp < 0x20 ? cp != '\n' && cp != '\t' : cp >= 0x7f && cp <= 0x9f;
		if (len == 0 || control) {
			len = len ? len : 1;
			for (size_t k = 0; k < len; k++)
				p[i + k] = '?';
		}
		i += len;
	}
}

void text_for_log_line(char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			s[i] = '?';
}

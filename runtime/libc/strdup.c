/* SPDX-License-Identifier: ISC */
/* strdup and strndup: apart from string.c, which then leans on nothing
 * (malloc leans on string.c, and string.c on malloc would be a circle). */
#include <stdlib.h>
#include <string.h>

char *strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = malloc(n);
	if (p)
		memcpy(p, s, n);
	return p;
}

char *strndup(const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *p = malloc(len + 1);
	if (p) {
		memcpy(p, s, len);
		p[len] = '\0';
	}
	return p;
}

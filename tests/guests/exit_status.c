/* SPDX-License-Identifier: ISC */
/* Exits with argv[1]; with "return" as argv[2], returns it from main. */
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	int s = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 0;
	if (argc > 2 && !strcmp(argv[2], "return"))
		return s;
	exit(s);
}

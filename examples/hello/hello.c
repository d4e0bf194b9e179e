/* SPDX-License-Identifier: ISC */
/* The demo guest: greets, shows its arguments and what protects it. */
#include <stdio.h>

#include "cloak/guest.h"

int main(int argc, char **argv)
{
	uint64_t prot = cloak_protection();
	printf("Hello from a cloak guest!\n");
	for (int i = 0; i < argc; i++)
		printf("  argv[%d] = \"%s\"\n", i, argv[i]);
	if (prot)
		printf("memory protection on:%s%s%s\n",
		       prot & CLOAK_PROT_CHECKED_ACCESS ? " monitor access checked" : "",
		       prot & CLOAK_PROT_NO_DIRECT_MAP ? ", out of the host direct map" : "",
		       prot & CLOAK_PROT_NO_GUP ? ", refused to host GUP" : "");
	else
		printf("memory protection off\n");
	return 0;
}

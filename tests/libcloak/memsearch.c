/*
 * memsearch FILE HEX: exit 0 if the bytes HEX occur in FILE, 1 if not, 2 on
 * error. With --le, searches for the bytes in reverse order (how a BIGNUM's
 * little-endian limbs hold a big-endian number). Used by the openssl bats
 * suite to look for a private key in core dumps.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int reverse = argc == 4 && !strcmp(argv[3], "--le");
	if (argc != 3 && !reverse) {
		fprintf(stderr, "usage: memsearch FILE HEX [--le]\n");
		return 2;
	}
	size_t n = strlen(argv[2]) / 2;
	unsigned char *needle = malloc(n + 1);
	for (size_t i = 0; i < n; i++)
		if (sscanf(argv[2] + 2 * i, "%2hhx", &needle[reverse ? n - 1 - i : i]) != 1) {
			fprintf(stderr, "memsearch: %s is not hex\n", argv[2]);
			return 2;
		}
	int fd = open(argv[1], O_RDONLY);
	struct stat st;
	if (n == 0 || fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) {
		fprintf(stderr, "memsearch: cannot read %s or empty pattern\n", argv[1]);
		return 2;
	}
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED) {
		perror("memsearch: mmap");
		return 2;
	}
	return memmem(m, (size_t)st.st_size, needle, n) ? 0 : 1;
}

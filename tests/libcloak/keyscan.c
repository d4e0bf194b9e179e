/* SPDX-License-Identifier: ISC */
/*
 * keyscan (FILE | --pid PID) NAME=HEX...: looks for numbers (as `openssl
 * pkey -text` prints them, big-endian hex) in a core dump or in the readable
 * memory of a running process (/proc/PID/maps and /proc/PID/mem), in every
 * encoding a program keeps a number in:
 *   be   big-endian bytes (DER, octet strings, what BN_bn2bin writes)
 *   le   the bytes reversed (a BIGNUM's little-endian limbs)
 *   hex  lowercase hexadecimal text;  HEX  uppercase (BN_bn2hex)
 * Prints "found NAME ENCODING" for each hit and a summary line, "scanned N
 * bytes; U regions unreadable" (a process's memfd_secret mappings are
 * unreadable through /proc/PID/mem). Exit status: 0 nothing found, 1 some
 * number found, 2 usage or I/O error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_NUMBERS 64
enum { ENC_BE, ENC_LE, ENC_HEX, ENC_HEX_UPPER, ENCODINGS };
static const char *const enc_name[ENCODINGS] = { "be", "le", "hex", "HEX" };

struct number {
	const char *name;
	unsigned char *pattern[ENCODINGS];
	size_t len[ENCODINGS];
	bool found[ENCODINGS];
};
static struct number numbers[MAX_NUMBERS];
static int count;
static size_t longest;

static int usage(void)
{
	fprintf(stderr, "usage: keyscan (FILE | --pid PID) NAME=HEX...\n");
	return 2;
}

static bool add_number(const char *arg)
{
	const char *eq = strchr(arg, '=');
	if (!eq || count == MAX_NUMBERS)
		return false;
	const char *hex = eq + 1;
	size_t digits = strlen(hex);
	if (!digits || digits % 2)
		return false;
	size_t n = digits / 2;
	unsigned char *be = malloc(n);
	for (size_t i = 0; i < n; i++)
		if (sscanf(hex + 2 * i, "%2hhx", &be[i]) != 1)
			return false;
	size_t skip = 0; /* a leading 00 that openssl prints for a set top bit */
	while (skip + 1 < n && be[skip] == 0)
		skip++;
	n -= skip;
	struct number *num = &numbers[count++];
	num->name = strndup(arg, (size_t)(eq - arg));
	num->pattern[ENC_BE] = be + skip;
	num->pattern[ENC_LE] = malloc(n);
	for (size_t i = 0; i < n; i++)
		num->pattern[ENC_LE][i] = be[skip + n - 1 - i];
	num->pattern[ENC_HEX] = malloc(2 * n + 1);
	num->pattern[ENC_HEX_UPPER] = malloc(2 * n + 1);
	for (size_t i = 0; i < n; i++) {
		sprintf((char *)num->pattern[ENC_HEX] + 2 * i, "%02x", be[skip + i]);
		sprintf((char *)num->pattern[ENC_HEX_UPPER] + 2 * i, "%02X", be[skip + i]);
	}
	num->len[ENC_BE] = num->len[ENC_LE] = n;
	num->len[ENC_HEX] = num->len[ENC_HEX_UPPER] = 2 * n;
	if (2 * n > longest)
		longest = 2 * n;
	return true;
}

static void search(const unsigned char *buf, size_t len)
{
	for (int i = 0; i < count; i++)
		for (int e = 0; e < ENCODINGS; e++)
			if (!numbers[i].found[e] &&
			    memmem(buf, len, numbers[i].pattern[e], numbers[i].len[e]))
				numbers[i].found[e] = true;
}

static int scan_file(const char *path, unsigned long long *scanned)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) {
		fprintf(stderr, "keyscan: cannot read %s\n", path);
		return -1;
	}
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED) {
		perror("keyscan: mmap");
		return -1;
	}
	search(m, (size_t)st.st_size);
	*scanned = (unsigned long long)st.st_size;
	munmap(m, (size_t)st.st_size);
	return 0;
}

/* Reads each readable region through /proc/PID/mem in chunks that overlap
 * by the longest pattern, so no hit is lost at a chunk boundary. */
static int scan_pid(const char *pid, unsigned long long *scanned, unsigned *unreadable)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%s/maps", pid);
	FILE *maps = fopen(path, "re");
	snprintf(path, sizeof path, "/proc/%s/mem", pid);
	int mem = open(path, O_RDONLY | O_CLOEXEC);
	if (!maps || mem < 0) {
		fprintf(stderr, "keyscan: cannot open %s: %s\n", path, strerror(errno));
		return -1;
	}
	enum { CHUNK = 1 << 20 };
	unsigned char *buf = malloc(CHUNK + longest);
	char line[512];
	while (fgets(line, sizeof line, maps)) {
		unsigned long lo, hi;
		char perms[8];
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 || perms[0] != 'r' ||
		    strstr(line, "[vvar") || strstr(line, "[vsyscall]"))
			continue;
		size_t carry = 0;
		for (unsigned long at = lo; at < hi;) {
			size_t want = hi - at < CHUNK ? hi - at : CHUNK;
			ssize_t got = pread(mem, buf + carry, want, (off_t)at);
			if (got <= 0) {
				(*unreadable)++;
				break;
			}
			search(buf, carry + (size_t)got);
			*scanned += (unsigned long long)got;
			at += (unsigned long)got;
			size_t total = carry + (size_t)got;
			carry = total < longest ? total : longest;
			memmove(buf, buf + total - carry, carry);
		}
	}
	free(buf);
	fclose(maps);
	close(mem);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return usage();
	int first = 2;
	const char *pid = NULL;
	if (!strcmp(argv[1], "--pid")) {
		if (argc < 4)
			return usage();
		pid = argv[2];
		first = 3;
	}
	for (int i = first; i < argc; i++)
		if (!add_number(argv[i])) {
			fprintf(stderr, "keyscan: %s is not NAME=HEX\n", argv[i]);
			return 2;
		}
	unsigned long long scanned = 0;
	unsigned unreadable = 0;
	if ((pid ? scan_pid(pid, &scanned, &unreadable) : scan_file(argv[1], &scanned)) != 0)
		return 2;
	bool any = false;
	for (int i = 0; i < count; i++)
		for (int e = 0; e < ENCODINGS; e++)
			if (numbers[i].found[e]) {
				printf("found %s %s\n", numbers[i].name, enc_name[e]);
				any = true;
			}
	printf("scanned %llu bytes; %u regions unreadable\n", scanned, unreadable);
	return any ? 1 : 0;
}

/* SPDX-License-Identifier: ISC */
/* The runner's reading of the device process's maps (runner/device_maps.h),
 * on maps files written here: what counts as guest memory, and when a
 * mapping of it holds a page that is not shared. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cloak/abi.h"
#include "mem/guestmem.h"
#include "runner/device_maps.h"

#define MEM (8ull << 20)
#define PG CLOAK_PAGE_SIZE
#define BASE 0x7f0000000000ull

struct fixture {
	struct guestmem *gm;
	struct device_maps_file id;
	char path[64];
};

/* Guest memory with pages [16, 20) shared and protection on; the id as the
 * runner would have it for a mapping at BASE of file 00:0e inode 4242. */
static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof *fx);
	struct fail f = { 0 };
	fx->gm = gm_create(GM_BACKEND_SHARED, MEM, -1, &f);
	if (!fx->gm)
		return -1;
	gm_share(fx->gm, gpa(16 * PG), 4);
	gm_protect(fx->gm);
	fx->id = (struct device_maps_file){ .base = BASE, .size = MEM, .have_id = true,
					    .dev_major = 0, .dev_minor = 0xe, .ino = 4242 };
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	gm_destroy(fx->gm);
	if (fx->path[0])
		unlink(fx->path);
	free(fx);
	return 0;
}

/* Checks a maps file holding text; returns device_maps_check's result. */
static int check(struct fixture *fx, const char *text, char *why, size_t n)
{
	strcpy(fx->path, "/tmp/cloak-test-maps-XXXXXX");
	int fd = mkstemp(fx->path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	why[0] = '\0';
	int r = device_maps_check(fd, fx->gm, &fx->id, why, n);
	close(fd);
	unlink(fx->path);
	fx->path[0] = '\0';
	return r;
}

static char line_buf[512];
static const char *line(uint64_t start, uint64_t end, uint64_t pgoff, const char *dev,
			uint64_t ino, const char *path)
{
	snprintf(line_buf, sizeof line_buf, "%llx-%llx rw-s %08llx %s %llu %s\n",
		 (unsigned long long)start, (unsigned long long)end, (unsigned long long)pgoff,
		 dev, (unsigned long long)ino, path);
	return line_buf;
}

static void test_only_shared_pages_pass(void **state)
{
	struct fixture *fx = *state;
	char text[4096] = "", why[200];
	strcat(text, "55d000000000-55d000021000 r-xp 00000000 08:01 77 /usr/bin/cloak\n");
	strcat(text, line(BASE + 16 * PG, BASE + 20 * PG, 16 * PG, "00:0e", 4242, "/memfd:g"));
	/* the device process's heap in a hole it unmapped: anonymous */
	strcat(text, "7f0000001000-7f0000003000 rw-p 00000000 00:00 0\n");
	strcat(text, "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]");
	assert_int_equal(check(fx, text, why, sizeof why), 0);
}

static void test_private_page_fails(void **state)
{
	struct fixture *fx = *state;
	char why[200];
	/* the whole inherited mapping, as before PROTECT */
	assert_int_equal(check(fx, line(BASE, BASE + MEM, 0, "00:0e", 4242, "/memfd:g"), why,
			       sizeof why), -1);
	assert_non_null(strstr(why, "maps a private guest page"));
	/* one page past the shared ones */
	assert_int_equal(check(fx, line(BASE + 16 * PG, BASE + 21 * PG, 16 * PG, "00:0e", 4242,
					 "/memfd:g"), why, sizeof why), -1);
}

/* The file is what counts, not the address: its private page mapped
 * somewhere else (as an mremap would) is caught. */
static void test_same_file_elsewhere_fails(void **state)
{
	struct fixture *fx = *state;
	char why[200];
	assert_int_equal(check(fx, line(0x10000000, 0x10001000, 3 * PG, "00:0e", 4242, "x"), why,
			       sizeof why), -1);
	assert_int_equal(check(fx, line(0x10000000, 0x10001000, 17 * PG, "00:0e", 4242, "x"), why,
			       sizeof why), 0);
	/* beyond guest memory */
	assert_int_equal(check(fx, line(0x10000000, 0x10002000, MEM - PG, "00:0e", 4242, "x"),
			       why, sizeof why), -1);
	assert_non_null(strstr(why, "beyond guest memory"));
}

/* Without the file's identity (its descriptor closed), any file mapping
 * over the inherited range is taken for guest memory. */
static void test_unknown_file_over_range(void **state)
{
	struct fixture *fx = *state;
	char why[200];
	const char *other = line(BASE + 2 * PG, BASE + 3 * PG, 0, "00:05", 99, "/dev/zero");
	assert_int_equal(check(fx, other, why, sizeof why), 0);
	fx->id.have_id = false;
	assert_int_equal(check(fx, other, why, sizeof why), -1);
	assert_int_equal(check(fx, line(BASE + 16 * PG, BASE + 17 * PG, 0, "00:05", 99, "x"), why,
			       sizeof why), 0);
}

static void test_unreadable_line_fails(void **state)
{
	struct fixture *fx = *state;
	char why[200];
	assert_int_equal(check(fx, "not a maps line\n", why, sizeof why), -1);
	assert_non_null(strstr(why, "cannot read"));
}

/* More lines than the runner's buffer holds, a private mapping last: the
 * lines cut at the buffer's edge are read whole. */
static void test_many_lines(void **state)
{
	struct fixture *fx = *state;
	size_t cap = 200000, len = 0;
	char *text = malloc(cap), why[200];
	for (int i = 0; i < 3000; i++)
		len += (size_t)snprintf(text + len, cap - len,
					"%llx-%llx rw-p 00000000 00:00 0 %.*s\n",
					0x100000000ull + i * 0x2000ull, 0x100001000ull + i * 0x2000ull,
					i % 40, "some-long-enough-name-to-vary-the-width--");
	assert_int_equal(check(fx, text, why, sizeof why), 0);
	strcat(text, line(BASE + 30 * PG, BASE + 31 * PG, 30 * PG, "00:0e", 4242, "/memfd:g"));
	assert_int_equal(check(fx, text, why, sizeof why), -1);
	free(text);
}

/* This process's own maps, identified from real guest memory: all of it
 * is mapped here, private pages too. */
static void test_own_maps(void **state)
{
	struct fixture *fx = *state;
	char why[200];
	struct device_maps_file id;
	device_maps_identify(fx->gm, &id);
	FILE *f = fopen("/proc/self/maps", "r");
	assert_non_null(f);
	assert_int_equal(device_maps_check(fileno(f), fx->gm, &id, why, sizeof why), -1);
	fclose(f);
	assert_non_null(strstr(why, "maps a private guest page"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_only_shared_pages_pass, setup, teardown),
		cmocka_unit_test_setup_teardown(test_private_page_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_same_file_elsewhere_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_file_over_range, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unreadable_line_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_lines, setup, teardown),
		cmocka_unit_test_setup_teardown(test_own_maps, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

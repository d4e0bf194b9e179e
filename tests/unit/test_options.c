/* SPDX-License-Identifier: ISC */
/* Command-line parsing: sizes, seconds, bounds, argument splitting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cloak/abi.h"
#include "cli/options.h"

static void test_parse_size(void **state)
{
	uint64_t v;
	assert_int_equal(parse_size("4096", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(parse_size("64M", &v), 0);
	assert_int_equal(v, 64ull << 20);
	assert_int_equal(parse_size("1G", &v), 0);
	assert_int_equal(v, 1ull << 30);
	assert_int_equal(parse_size("512k", &v), 0);
	assert_int_equal(v, 512ull << 10);
	assert_int_equal(parse_size("2MiB", &v), 0);
	assert_int_equal(v, 2ull << 20);
	const char *bad[] = { "", "M", "-1", "1.5G", "12Q", "64M ", " 64M", "0x10",
			      "18446744073709551616", "17179869184G", NULL };
	for (int i = 0; bad[i]; i++) {
		v = 12345;
		assert_int_equal(parse_size(bad[i], &v), -1);
		assert_int_equal(v, 12345); /* untouched on error */
	}
	assert_int_equal(parse_size("18446744073709551615", &v), 0);
	assert_int_equal(v, UINT64_MAX);
	assert_int_equal(parse_size(NULL, &v), -1);
}

static void test_parse_seconds(void **state)
{
	uint64_t ms;
	assert_int_equal(parse_seconds("10", &ms), 0);
	assert_int_equal(ms, 10000);
	assert_int_equal(parse_seconds("0.5", &ms), 0);
	assert_int_equal(ms, 500);
	assert_int_equal(parse_seconds("2.25", &ms), 0);
	assert_int_equal(ms, 2250);
	assert_int_equal(parse_seconds("1.23456", &ms), 0);
	assert_int_equal(ms, 1234);
	assert_int_equal(parse_seconds("0", &ms), 0);
	assert_int_equal(ms, 0);
	const char *bad[] = { "", ".5", "1.", "-1", "1s", "abc", "99999999999999999999", NULL };
	for (int i = 0; bad[i]; i++)
		assert_int_equal(parse_seconds(bad[i], &ms), -1);
}

static enum opt_result parse(struct options *o, char *err, const char *a0, ...)
{
	static char *argv[32];
	va_list ap;
	int argc = 0;
	argv[argc++] = (char *)"cloak";
	va_start(ap, a0);
	for (const char *a = a0; a; a = va_arg(ap, const char *))
		argv[argc++] = (char *)a;
	va_end(ap);
	argv[argc] = NULL;
	FILE *devnull = fopen("/dev/null", "w");
	struct fail f = { 0 };
	enum opt_result r = options_parse(argc, argv, o, &f, devnull);
	memcpy(err, f.msg, 256);
	err[255] = 0;
	if (r == OPT_ERROR)
		assert_int_equal(f.status, CLOAK_EXIT_USAGE);
	fclose(devnull);
	return r;
}

static void test_options_basic(void **state)
{
	struct options o;
	char err[256];
	assert_int_equal(parse(&o, err, "g.elf", NULL), OPT_RUN);
	assert_string_equal(o.guest, "g.elf");
	assert_int_equal(o.mem, CLOAK_MEM_DEFAULT);
	assert_int_equal(o.backend, GM_BACKEND_SECRET);
	assert_int_equal(o.guest_argc, 0);

	assert_int_equal(parse(&o, err, "--mem=128M", "--timeout=1.5", "--memory=shared",
			       "-v", "g.elf", "--", "a", "--mem=1G", NULL), OPT_RUN);
	assert_int_equal(o.mem, 128ull << 20);
	assert_int_equal(o.timeout_ms, 1500);
	assert_int_equal(o.backend, GM_BACKEND_SHARED);
	assert_true(o.verbose);
	/* Everything after the guest belongs to the guest. */
	assert_int_equal(o.guest_argc, 2);
	assert_string_equal(o.guest_argv[0], "a");
	assert_string_equal(o.guest_argv[1], "--mem=1G");

	assert_int_equal(parse(&o, err, "-m", "8M", "g.elf", "x", NULL), OPT_RUN);
	assert_int_equal(o.mem, 8ull << 20);
	assert_int_equal(o.guest_argc, 1);
}

static void test_options_errors(void **state)
{
	struct options o;
	char err[256];
	assert_int_equal(parse(&o, err, NULL), OPT_ERROR);
	assert_non_null(strstr(err, "no guest"));
	assert_int_equal(parse(&o, err, "--mem=3M", "g", NULL), OPT_ERROR);
	assert_non_null(strstr(err, "multiple of 2M"));
	assert_int_equal(parse(&o, err, "--mem=32G", "g", NULL), OPT_ERROR);
	assert_int_equal(parse(&o, err, "--mem=2M", "g", NULL), OPT_ERROR);
	assert_int_equal(parse(&o, err, "--mem=lots", "g", NULL), OPT_ERROR);
	assert_non_null(strstr(err, "not a size"));
	assert_int_equal(parse(&o, err, "--timeout=-3", "g", NULL), OPT_ERROR);
	assert_int_equal(parse(&o, err, "--memory=ram", "g", NULL), OPT_ERROR);
	assert_int_equal(parse(&o, err, "--bogus", "g", NULL), OPT_ERROR);
	assert_non_null(strstr(err, "--bogus"));
	assert_int_equal(parse(&o, err, "--mem", NULL), OPT_ERROR);
	assert_non_null(strstr(err, "needs a value"));
	assert_int_equal(parse(&o, err, "-q", "-v", "g", NULL), OPT_ERROR);
	assert_int_equal(parse(&o, err, "--json", "g", NULL), OPT_ERROR);
	/* Exactly one line, no trailing newline. */
	assert_null(strchr(err, '\n'));
}

static void test_options_devices_and_check(void **state)
{
	struct options o;
	char err[256];
	assert_int_equal(parse(&o, err, "--block=d=/tmp/x", "--block", "e=/tmp/y,ro",
			       "--channel=c=listen:/tmp/s", "g", NULL), OPT_RUN);
	assert_int_equal(o.nblock, 2);
	assert_string_equal(o.block[1], "e=/tmp/y,ro");
	assert_int_equal(o.nchannel, 1);
	assert_int_equal(parse(&o, err, "check", "--json", NULL), OPT_RUN);
	assert_true(o.check);
	assert_true(o.json);
	assert_int_equal(parse(&o, err, "check", "g.elf", NULL), OPT_ERROR);
	assert_int_equal(parse(&o, err, "--help", NULL), OPT_EXIT_OK);
	assert_int_equal(parse(&o, err, "--version", NULL), OPT_EXIT_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_parse_seconds),
		cmocka_unit_test(test_options_basic),
		cmocka_unit_test(test_options_errors),
		cmocka_unit_test(test_options_devices_and_check),
	};
	return cmocka_run_group_tests_name("options", tests, NULL, NULL);
}

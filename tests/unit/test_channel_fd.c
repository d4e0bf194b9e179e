/* SPDX-License-Identifier: ISC */
/*
 * --channel NAME=fd:N, the listening socket a supervisor (systemd's socket
 * activation) passes to the monitor: the spec's parsing, and the checks
 * made on the descriptor before the monitor takes it, each against a
 * descriptor of the wrong kind. No KVM needed: these run before any guest.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "device/channel.h"

/* A Unix socket of this type, bound to a fresh path, listening or not. */
static int unix_socket(int type, bool listening, char *path, size_t len)
{
	snprintf(path, len, "/tmp/cloak-test-chan-%d-%d.sock", (int)getpid(), type);
	unlink(path);
	int s = socket(AF_UNIX, type, 0);
	assert_true(s >= 0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	strcpy(a.sun_path, path);
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
	if (listening)
		assert_int_equal(listen(s, 4), 0);
	return s;
}

/* Parses NAME=fd:FD and takes it: the fail status (0 when taken). */
static int take(int fd, struct channel *c, struct fail *f)
{
	char spec[64];
	snprintf(spec, sizeof spec, "c=fd:%d", fd);
	memset(f, 0, sizeof *f);
	if (channel_parse(spec, c, f))
		return f->status;
	return channel_take_given(c, f) ? f->status : 0;
}

static void test_parse(void **state)
{
	struct channel c;
	struct fail f = { 0 };
	assert_int_equal(channel_parse("agent=fd:3", &c, &f), 0);
	assert_int_equal(c.mode, CHAN_LISTEN);
	assert_int_equal(c.given_fd, 3);
	assert_int_equal(c.listen_fd, -1); /* nothing taken at parse time */
	assert_string_equal(c.name, "agent");
	/* A path channel has no given descriptor. */
	assert_int_equal(channel_parse("agent=listen:/tmp/x.sock", &c, &f), 0);
	assert_int_equal(c.given_fd, -1);
	const char *bad[] = { "c=fd:", "c=fd:x", "c=fd:-3", "c=fd:3x", "c=fd:0", "c=fd:2",
			      "c=fd:3,mode=0600", "c=fd:99999999999" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		memset(&f, 0, sizeof f);
		assert_int_equal(channel_parse(bad[i], &c, &f), -1);
		assert_int_equal(f.status, CLOAK_EXIT_USAGE);
		assert_non_null(strstr(f.msg, bad[i]));
	}
}

static void test_takes_a_listening_unix_socket(void **state)
{
	char path[108];
	int s = unix_socket(SOCK_STREAM, true, path, sizeof path);
	struct channel c;
	struct fail f;
	assert_int_equal(take(s, &c, &f), 0);
	assert_int_equal(c.listen_fd, s);
	/* Made non-blocking (the guest waits in POLL) and close-on-exec. */
	assert_true(fcntl(s, F_GETFL) & O_NONBLOCK);
	assert_true(fcntl(s, F_GETFD) & FD_CLOEXEC);
	/* A peer's connection is there to accept, as for a listen: channel. */
	int p = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	strcpy(a.sun_path, path);
	assert_int_equal(connect(p, (struct sockaddr *)&a, sizeof a), 0);
	int fd;
	uint32_t ev;
	assert_int_equal(channel_wait_for(&c, &fd, &ev), 0);
	assert_int_equal(fd, s);
	/* Closing the channel closes the monitor's copy only: the socket
	 * file is its owner's, left in place. */
	channel_close(&c);
	assert_int_equal(access(path, F_OK), 0);
	close(p);
	unlink(path);
}

static void test_refuses_other_descriptors(void **state)
{
	char path[108];
	struct channel c;
	struct fail f;
	struct {
		int fd;
		const char *says;
	} cases[5];
	int n = 0;
	cases[n++] = (typeof(cases[0])){ unix_socket(SOCK_STREAM, false, path, sizeof path),
					 "is not listening" };
	unlink(path);
	cases[n++] = (typeof(cases[0])){ unix_socket(SOCK_DGRAM, false, path, sizeof path),
					 "is not a stream socket" };
	unlink(path);
	cases[n++] = (typeof(cases[0])){ socket(AF_INET, SOCK_STREAM, 0), "is not a Unix socket" };
	cases[n++] = (typeof(cases[0])){ open("/dev/null", O_RDONLY), "is not a socket" };
	int closed = dup(0);
	close(closed);
	cases[n++] = (typeof(cases[0])){ closed, "is not open" };
	for (int i = 0; i < n; i++) {
		assert_true(cases[i].fd >= 3);
		assert_int_equal(take(cases[i].fd, &c, &f), CLOAK_EXIT_RESOURCE);
		assert_non_null(strstr(f.msg, cases[i].says));
		assert_non_null(strstr(f.msg, "--channel c: descriptor"));
		assert_int_equal(c.listen_fd, -1);
		if (i < n - 1)
			close(cases[i].fd);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_takes_a_listening_unix_socket),
		cmocka_unit_test(test_refuses_other_descriptors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

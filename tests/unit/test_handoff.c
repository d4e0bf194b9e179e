/* SPDX-License-Identifier: ISC */
/*
 * The hand-off between the runner and the device process
 * (monitor/handoff/handoff.h), with two real processes and no KVM: the
 * runner's half (handoff_send, handoff_await, handoff_take_reply) in the
 * test, the device process's (device_next_request, device/serve.c) in a
 * forked child that echoes each request's number and token. Both with one
 * CPU's rules (no spin: every wait sleeps) and with more than one (each
 * side spins first), thousands of requests in a row: a reply to the wrong
 * request, a lost wake-up or a spin that keeps a stale number would hang
 * (the alarm ends the test) or fail the reply's check. And the checks
 * themselves: a reply out of turn, with another token, or out of shape is
 * refused.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "device/serve.h"
#include "handoff/handoff.h"

#define ROUNDS 5000

static struct handoff make(bool spin)
{
	struct handoff h;
	memset(&h, 0, sizeof h);
	h.page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(h.page != MAP_FAILED);
	h.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_true(h.wake_fd >= 0);
	h.token_state = 0x9e3779b97f4a7c15ull;
	h.spin = spin;
	return h;
}

/* The device process: answers each request with RESUME, its number and
 * its token, until FINISH. A request taken twice (the runner numbers them
 * 0, 1, 2, ... in `value`) ends it with status 3: a call made twice. */
static _Noreturn void echo_device(struct handoff *h)
{
	struct device d;
	memset(&d, 0, sizeof d);
	d.dump_fd = -1;
	struct handoff_request rq;
	uint32_t next = 0;
	for (;;) {
		if (!device_next_request(&d, h, &rq))
			continue;
		if (rq.op == HANDOFF_FINISH)
			_exit(0);
		if (rq.value != next++)
			_exit(3);
		h->page->rep = (struct handoff_reply){ .verdict = HANDOFF_RESUME, .token = rq.token };
		handoff_publish(&h->page->rep_seq, &h->page->rep_sleeping, h->seq);
	}
}

/* A short pause before some requests, so the device process is already
 * waiting (spinning, with more than one CPU) when one arrives, as when the
 * guest runs between calls. */
static void pause_us(unsigned us)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000000l + t.tv_nsec - t0.tv_nsec < us * 1000l);
}

static void round_trips(bool spin)
{
	struct handoff h = make(spin);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		echo_device(&h);
	alarm(60);
	struct handoff_request rq = { .op = HANDOFF_CALL };
	const struct timespec slice = { 0, 50000000 };
	for (unsigned i = 0; i < ROUNDS; i++) {
		assert_false(handoff_unsolicited(&h));
		rq.value = i;
		if (i % 2)
			pause_us(i % 8 == 1 ? 30 : 300);
		handoff_send(&h, &rq);
		while (!handoff_await(&h, &slice)) {
			int st;
			if (waitpid(pid, &st, WNOHANG) == pid)
				fail_msg("request %u: the device side ended (status %d): a request "
					 "taken twice, or none answered", i,
					 WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		}
		struct handoff_reply rep;
		const char *why = NULL;
		if (handoff_take_reply(&h, &rep, &why) != 0)
			fail_msg("request %u: %s", i, why);
		assert_int_equal(rep.verdict, HANDOFF_RESUME);
	}
	rq.op = HANDOFF_FINISH;
	handoff_send(&h, &rq);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	alarm(0);
	munmap(h.page, 4096);
	close(h.wake_fd);
}

static void test_one_cpu_rules(void **state)
{
	(void)state;
	round_trips(false);
}

static void test_spinning_rules(void **state)
{
	(void)state;
	round_trips(true);
}

/* The runner's check of a reply, without a device process: the test
 * writes the device's half itself. */
static void test_replies_out_of_turn_or_shape_are_refused(void **state)
{
	(void)state;
	struct handoff h = make(false);
	struct handoff_request rq = { .op = HANDOFF_CALL };
	struct handoff_reply rep;
	const char *why;
	handoff_send(&h, &rq);
	uint64_t token = h.page->req.token;
	/* The right one. */
	h.page->rep = (struct handoff_reply){ .verdict = HANDOFF_RESUME, .token = token };
	atomic_store(&h.page->rep_seq, h.seq);
	assert_int_equal(handoff_take_reply(&h, &rep, &why), 0);
	/* Another request's number, another token. */
	handoff_send(&h, &rq);
	token = h.page->req.token;
	h.page->rep = (struct handoff_reply){ .verdict = HANDOFF_RESUME, .token = token };
	atomic_store(&h.page->rep_seq, h.seq + 7);
	assert_int_equal(handoff_take_reply(&h, &rep, &why), -1);
	assert_string_equal(why, "replied out of turn");
	atomic_store(&h.page->rep_seq, h.seq);
	h.page->rep.token = token + 1;
	assert_int_equal(handoff_take_reply(&h, &rep, &why), -1);
	assert_string_equal(why, "replied out of turn");
	/* Out of shape: no such verdict; an end with a status no call gives;
	 * a signal on an end that is not an interruption. */
	h.page->rep = (struct handoff_reply){ .verdict = 77, .token = token };
	assert_int_equal(handoff_take_reply(&h, &rep, &why), -1);
	assert_string_equal(why, "replied out of shape");
	h.page->rep = (struct handoff_reply){ .verdict = HANDOFF_END, .status = 100000, .token = token };
	assert_int_equal(handoff_take_reply(&h, &rep, &why), -1);
	h.page->rep = (struct handoff_reply){ .verdict = HANDOFF_END, .status = 253, .signal = 15,
					      .token = token };
	assert_int_equal(handoff_take_reply(&h, &rep, &why), -1);
	h.page->rep = (struct handoff_reply){ .verdict = HANDOFF_END, .status = 240, .signal = 15,
					      .token = token };
	assert_int_equal(handoff_take_reply(&h, &rep, &why), 0);
	/* A reply published with no request outstanding. */
	atomic_store(&h.page->rep_seq, h.seq + 1);
	assert_true(handoff_unsolicited(&h));
	munmap(h.page, 4096);
	close(h.wake_fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_cpu_rules),
		cmocka_unit_test(test_spinning_rules),
		cmocka_unit_test(test_replies_out_of_turn_or_shape_are_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: ISC */
/*
 * The device process's wake-up, measured apart from KVM: a parent and a
 * forked child ping-pong a sequence number through one shared page, woken
 * by a futex on the number, by an eventfd each way (the alternative), or
 * by the monitor's own wake rules (monitor/handoff/handoff.c: with more
 * than one CPU, spin a while, then sleep on the futex), with a gap between
 * round trips like the guest's time between calls. Prints the round trip
 * of each, in ns, and for the monitor's rules how many of the replies the
 * spin caught: with two vCPUs this splits a device call's cost into the
 * hand-off itself and the rest (docs/performance.md).
 *   bench_handoff [ROUNDS [GAP_NS]]
 */
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "handoff/handoff.h"

struct page {
	_Atomic uint32_t req, req_sleeping;
	unsigned char pad[56]; /* each side's words on a cache line of their own */
	_Atomic uint32_t rep, rep_sleeping;
};

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void futex_wait(_Atomic uint32_t *w, uint32_t old)
{
	while (atomic_load_explicit(w, memory_order_acquire) == old)
		syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT, old, NULL, NULL, 0);
}

static void futex_post(_Atomic uint32_t *w, uint32_t v)
{
	atomic_store_explicit(w, v, memory_order_release);
	syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE, 1, NULL, NULL, 0);
}

/* ns per round trip, futex wake-ups. */
static double by_futex(struct page *p, unsigned rounds)
{
	atomic_store(&p->req, 0);
	atomic_store(&p->rep, 0);
	pid_t c = fork();
	if (c == 0) {
		for (uint32_t i = 1; i <= rounds; i++) {
			futex_wait(&p->req, i - 1);
			futex_post(&p->rep, i);
		}
		_exit(0);
	}
	uint64_t t0 = now_ns();
	for (uint32_t i = 1; i <= rounds; i++) {
		futex_post(&p->req, i);
		futex_wait(&p->rep, i - 1);
	}
	uint64_t t = now_ns() - t0;
	waitpid(c, NULL, 0);
	return (double)t / rounds;
}

static void pause_ns(uint64_t ns)
{
	for (uint64_t t0 = now_ns(); now_ns() - t0 < ns;)
		__builtin_ia32_pause();
}

/* ns per round trip by the monitor's rules, both sides spinning first
 * where there is more than one CPU (h->spin); *caught: the share of the
 * parent's waits that the spin ended. gap_ns of work before each request,
 * as the guest runs between calls (during it the child spins, then
 * sleeps). */
static double by_monitor_rules(struct page *p, unsigned rounds, uint64_t gap_ns, bool spin,
				 double *caught)
{
	struct handoff h = {.spin = spin};
	_Atomic uint32_t *sleep_req = &p->req_sleeping, *sleep_rep = &p->rep_sleeping;
	atomic_store(&p->req, 0);
	atomic_store(&p->rep, 0);
	atomic_store(sleep_req, 0);
	atomic_store(sleep_rep, 0);
	pid_t c = fork();
	if (c == 0) {
		for (uint32_t i = 1; i <= rounds; i++) {
			if (!handoff_spin(&h, &p->req, i - 1))
				while (atomic_load(&p->req) == i - 1)
					handoff_sleep(&p->req, sleep_req, i - 1, NULL);
			handoff_publish(&p->rep, sleep_rep, i);
		}
		_exit(0);
	}
	unsigned spun = 0;
	uint64_t busy = 0;
	for (uint32_t i = 1; i <= rounds; i++) {
		pause_ns(gap_ns);
		uint64_t t0 = now_ns();
		handoff_publish(&p->req, sleep_req, i);
		if (handoff_spin(&h, &p->rep, i - 1))
			spun++;
		else
			while (atomic_load(&p->rep) == i - 1)
				handoff_sleep(&p->rep, sleep_rep, i - 1, NULL);
		busy += now_ns() - t0;
	}
	waitpid(c, NULL, 0);
	*caught = (double)spun / rounds;
	return (double)busy / rounds;
}

/* ns per round trip, an eventfd each way (the number still in the page). */
static double by_eventfd(struct page *p, unsigned rounds)
{
	int to = eventfd(0, 0), back = eventfd(0, 0);
	uint64_t one = 1, got;
	if (to < 0 || back < 0)
		return -1;
	pid_t c = fork();
	if (c == 0) {
		for (uint32_t i = 1; i <= rounds; i++) {
			if (read(to, &got, sizeof got) != sizeof got)
				_exit(1);
			atomic_store_explicit(&p->rep, i, memory_order_release);
			if (write(back, &one, sizeof one) != sizeof one)
				_exit(1);
		}
		_exit(0);
	}
	uint64_t t0 = now_ns();
	for (uint32_t i = 1; i <= rounds; i++) {
		atomic_store_explicit(&p->req, i, memory_order_release);
		if (write(to, &one, sizeof one) != sizeof one || read(back, &got, sizeof got) != sizeof got)
			break;
	}
	uint64_t t = now_ns() - t0;
	waitpid(c, NULL, 0);
	close(to);
	close(back);
	return (double)t / rounds;
}

int main(int argc, char **argv)
{
	unsigned rounds = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 20000;
	uint64_t gap = argc > 2 ? strtoull(argv[2], NULL, 10) : 40000;
	struct page *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || rounds == 0)
		return 1;
	/* Interleaved, best of 5 each: the machine is shared and noisy. */
	double f = 1e18, e = 1e18, m = 1e18, ms = 1e18, caught = 0;
	unsigned mrounds = rounds / 10 ? rounds / 10 : 1; /* each carries a gap */
	for (int r = 0; r < 5; r++) {
		double a = by_futex(p, rounds), b = by_eventfd(p, rounds), k, x = by_monitor_rules(p, mrounds, gap, false, &k);
		if (a < f)
			f = a;
		if (b > 0 && b < e)
			e = b;
		if (x < m)
			m = x;
		x = by_monitor_rules(p, mrounds, gap, true, &k);
		if (x < ms)
			ms = x, caught = k;
	}
	printf("## the device process's wake-up: a round trip between two processes "
	       "(best of 5 x %u, interleaved)\n", rounds);
	printf("| wake-up | ns per round trip | against futex |\n|---|---|---|\n");
	printf("| futex on the shared page (used) | %.0f | 1.00x |\n", f);
	printf("| eventfd each way | %.0f | %.2fx |\n", e, e / f);
	printf("\n| the monitor's rules, %u round trips each after %.0f µs of work "
	       "(the guest between calls) | ns per round trip | against futex |\n|---|---|---|\n",
	       mrounds, (double)gap / 1000);
	printf("| sleep at once (one CPU) | %.0f | %.2fx |\n", m, m / f);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	printf("| spin up to 200 µs, then sleep (the monitor does so with more than one CPU%s); "
	       "the spin caught %.0f%% | %.0f | %.2fx |\n",
	       cpus > 1 ? "" : "; not on this one, shown for why", caught * 100, ms, ms / f);
	return 0;
}

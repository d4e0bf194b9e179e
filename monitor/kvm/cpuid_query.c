/* SPDX-License-Identifier: ISC */
/* KVM_GET_SUPPORTED_CPUID on a thread of its own; see cpuid_query.h. */
#include "cpuid_query.h"

#include <errno.h>
#include <linux/kvm.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>

/* The whole table, grown until KVM stops answering E2BIG. */
static struct kvm_cpuid2 *ask(int kvm_fd, int *err)
{
	for (int n = 128; n <= 4096; n *= 2) {
		struct kvm_cpuid2 *c = calloc(1, sizeof *c + (size_t)n * sizeof c->entries[0]);
		if (!c) {
			*err = ENOMEM;
			return NULL;
		}
		c->nent = (unsigned)n;
		if (ioctl(kvm_fd, KVM_GET_SUPPORTED_CPUID, c) == 0)
			return c;
		*err = errno;
		free(c);
		if (*err != E2BIG)
			return NULL;
	}
	return NULL;
}

static void *query_thread(void *arg)
{
	struct cpuid_query *q = arg;
	q->result = ask(q->kvm_fd, &q->err);
	return NULL;
}

/* The CPUs this process may use but for the one it runs on. Left to the
 * scheduler, a new thread starts on its creator's CPU and the two take
 * turns (measured on the emulating-KVM build machines, 2026-12-03:
 * nothing overlapped, the boot took as long); on another CPU the query's
 * ~0.45 ms hid behind the main thread's work (the main thread then waited
 * 0.15 ms for it instead of 0.45). Not re-measured since: the machines of
 * 2026-12-04 have no /dev/kvm.
 * false where there is no other CPU: then there is nothing to overlap. */
static bool other_cpus(cpu_set_t *set)
{
	if (sched_getaffinity(0, sizeof *set, set) != 0)
		return false;
	int me = sched_getcpu();
	if (me >= 0 && me < CPU_SETSIZE)
		CPU_CLR(me, set);
	return CPU_COUNT(set) > 0;
}

void cpuid_query_start(struct cpuid_query *q, int kvm_fd)
{
	*q = (struct cpuid_query){ .kvm_fd = kvm_fd };
	cpu_set_t cpus;
	pthread_attr_t attr;
	if (!other_cpus(&cpus) || pthread_attr_init(&attr) != 0)
		return;
	sigset_t all, old;
	sigfillset(&all);
	if (pthread_attr_setaffinity_np(&attr, sizeof cpus, &cpus) == 0 &&
	    pthread_sigmask(SIG_SETMASK, &all, &old) == 0) {
		q->running = pthread_create(&q->thread, &attr, query_thread, q) == 0;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	pthread_attr_destroy(&attr);
}

static void join(struct cpuid_query *q)
{
	if (q->running)
		pthread_join(q->thread, NULL);
	q->running = false;
}

struct kvm_cpuid2 *cpuid_query_take(struct cpuid_query *q)
{
	bool threaded = q->running;
	join(q);
	if (!threaded && !q->result)
		q->result = ask(q->kvm_fd, &q->err);
	struct kvm_cpuid2 *c = q->result;
	q->result = NULL;
	if (!c)
		errno = q->err;
	return c;
}

void cpuid_query_end(struct cpuid_query *q)
{
	join(q);
	free(q->result);
	q->result = NULL;
}

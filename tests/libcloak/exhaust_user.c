/* SPDX-License-Identifier: ISC */
/*
 * Runs a process (or several of one user at once) out of secret memory the
 * way a program would: cloak_secret_alloc(4096) in a loop, writing every
 * secret it gets, until an allocation fails. Each must end with NULL and
 * libcloak's RLIMIT_MEMLOCK message, never by a signal: on kernels that
 * charge secret pages to the lock limit when they are first touched, per
 * user, a store to memory handed out past the limit is a SIGBUS.
 *   exhaust_user [PROCS]   PROCS processes at once (default 1)
 *   exhaust_user --resident  whether every page of a pooled, a large and a
 *                          guarded secret is resident when handed out,
 *                          before the program touches it (mincore): what
 *                          makes a later store safe on such kernels
 * The processes hold what they got until all have failed once, so that
 * they share the user's budget. Prints one line a process; exit 0 when
 * every process failed cleanly with the message, 1 otherwise.
 */
#include <cloak/secret.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* 4 GiB of 4 KiB secrets: far past any lock limit these tests set. */
#define MAX_SECRETS (1u << 20)

static int exhaust(int id, int done_fd, int go_fd)
{
	unsigned n = 0;
	const char *why = "";
	for (; n < MAX_SECRETS; n++) {
		unsigned char *p = cloak_secret_alloc(4096);
		if (!p) {
			why = cloak_secret_last_error();
			break;
		}
		memset(p, 0xa5, 4096); /* the store a SIGBUS would hit */
	}
	bool ok = n < MAX_SECRETS && strstr(why, "RLIMIT_MEMLOCK") != NULL;
	printf("process %d: %u secrets of 4 KiB, then %s: %s\n", id, n,
	       n < MAX_SECRETS ? "NULL" : "no failure", why);
	fflush(stdout);
	char c = 0;
	if (write(done_fd, &c, 1) != 1 || read(go_fd, &c, 1) < 0)
		return 1;
	return ok ? 0 : 1;
}

/* Pages of [p, p + size) not resident, -1 if mincore fails. */
static long absent_pages(const void *p, size_t size)
{
	uintptr_t first = (uintptr_t)p & ~(uintptr_t)4095;
	size_t n = ((uintptr_t)p + size - first + 4095) / 4096;
	unsigned char vec[1024];
	if (n > sizeof vec || mincore((void *)first, n * 4096, vec) != 0)
		return -1;
	long absent = 0;
	for (size_t i = 0; i < n; i++)
		absent += !(vec[i] & 1);
	return absent;
}

static int resident(void)
{
	static const struct { const char *what; size_t size; bool guarded; } cases[] = {
		{ "pooled 60000 B", 60000, false },
		{ "large 1 MiB", 1 << 20, false },
		{ "guarded 100000 B", 100000, true },
	};
	int bad = 0;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		void *p = cases[i].guarded ? cloak_secret_alloc_guarded(cases[i].size)
		                           : cloak_secret_alloc(cases[i].size);
		if (!p) {
			printf("%s: NULL: %s\n", cases[i].what, cloak_secret_last_error());
			return 1;
		}
		long absent = absent_pages(p, cases[i].size);
		printf("%s: %ld pages not resident when handed out\n", cases[i].what, absent);
		bad |= absent != 0;
	}
	return bad;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--resident"))
		return resident();
	int procs = argc > 1 ? atoi(argv[1]) : 1;
	if (procs < 1 || procs > 16) {
		fprintf(stderr, "usage: exhaust_user [PROCS 1-16]\n");
		return 2;
	}
	int done[2], go[2];
	if (pipe(done) || pipe(go)) {
		perror("pipe");
		return 1;
	}
	for (int i = 0; i < procs; i++) {
		pid_t pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			close(done[0]);
			close(go[1]);
			_exit(exhaust(i, done[1], go[0]));
		}
	}
	close(done[1]);
	close(go[0]);
	/* Everyone has failed once (or died): let them go. */
	char c;
	for (int i = 0; i < procs && read(done[0], &c, 1) == 1; i++)
		;
	close(go[1]);
	int bad = 0;
	for (int i = 0; i < procs; i++) {
		int st;
		pid_t pid = wait(&st);
		if (pid < 0)
			break;
		if (WIFSIGNALED(st)) {
			printf("a process died by signal %d (%s)\n", WTERMSIG(st), strsignal(WTERMSIG(st)));
			bad = 1;
		} else if (WEXITSTATUS(st) != 0) {
			printf("a process exited %d\n", WEXITSTATUS(st));
			bad = 1;
		}
	}
	return bad;
}

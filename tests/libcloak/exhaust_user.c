/* SPDX-License-Identifier: ISC */
/*
 * Runs a process (or several of one user at once) out of secret memory the
 * way a program would: cloak_secret_alloc(4096) in a loop, writing every
 * secret it gets, until an allocation fails. Each must end with NULL and
 * libcloak's RLIMIT_MEMLOCK message, never by a signal: on kernels that
 * charge secret pages to the lock limit when they are first touched, per
 * user, a store to memory handed out past the limit is a SIGBUS.
 *   exhaust_user [PROCS]   PROCS processes at once (default 1)
 * The processes hold what they got until all have failed once, so that
 * they share the user's budget. Prints one line a process; exit 0 when
 * every process failed cleanly with the message, 1 otherwise.
 */
#include <cloak/secret.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int main(int argc, char **argv)
{
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

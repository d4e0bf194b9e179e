/* SPDX-License-Identifier: ISC */
/*
 * End-to-end boot time and memory: runs a command N times (fork+exec to
 * exit) and reports min and median wall time and the largest RSS, so that
 * `cloak hello` is measured next to /bin/true in the same run.
 *   bench_boot [--raw] N LABEL -- CMD ARGS... [:: LABEL -- CMD ARGS...]...
 * The first row is the reference for the time beyond it; the last row is
 * the reference for the ratio column. With --raw it prints, instead of the
 * table, one line per command: "LABEL<TAB>max RSS KiB<TAB>ms of round 1,
 * round 2, ..." (space separated, in round order), for scripts that compute
 * per-round differences.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

struct result {
	const char *label;
	double min_ms, med_ms;
	long maxrss_kib;
};

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int run_once(char **cmd, double *ms, long *rss)
{
	double t0 = now_ms();
	pid_t p = fork();
	if (p == 0) {
		int fd = open("/dev/null", O_WRONLY);
		dup2(fd, 1);
		dup2(fd, 2);
		execv(cmd[0], cmd);
		_exit(127);
	}
	int st;
	struct rusage ru;
	if (wait4(p, &st, 0, &ru) < 0)
		return -1;
	*ms = now_ms() - t0;
	*rss = ru.ru_maxrss;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#define MAX_CMDS 8

static void print_raw(const struct result *res, const double *t, int nres, int n)
{
	for (int c = 0; c < nres; c++) {
		printf("%s\t%ld\t", res[c].label, res[c].maxrss_kib);
		for (int k = 0; k < n; k++)
			printf("%s%.4f", k ? " " : "", t[c * n + k]);
		printf("\n");
	}
}

int main(int argc, char **argv)
{
	int raw = argc > 1 && !strcmp(argv[1], "--raw");
	if (raw) {
		argv++;
		argc--;
	}
	if (argc < 5) {
		fprintf(stderr, "usage: bench_boot [--raw] N LABEL -- CMD... [:: LABEL -- CMD...]\n");
		return 2;
	}
	int n = atoi(argv[1]);
	if (n < 1)
		n = 1;
	struct result res[MAX_CMDS];
	char **cmds[MAX_CMDS];
	int nres = 0;
	for (int i = 2; i < argc && nres < MAX_CMDS;) {
		if (i + 2 >= argc || strcmp(argv[i + 1], "--")) {
			fprintf(stderr, "bench_boot: expected LABEL -- CMD\n");
			return 2;
		}
		int end = i + 2;
		while (end < argc && strcmp(argv[end], "::"))
			end++;
		res[nres] = (struct result){ argv[i], 0, 0, 0 };
		cmds[nres++] = argv + i + 2;
		argv[end < argc ? end : argc] = NULL;
		i = end + 1;
	}
	double *t = calloc((size_t)(n * nres), sizeof *t);
	/* Interleaved: round k runs every command once, so a burst of load
	 * from other work on this shared machine hits all commands alike. One
	 * warm-up round first (page cache, KVM module state). */
	for (int k = -1; k < n; k++) {
		for (int c = 0; c < nres; c++) {
			double ms;
			long rss;
			if (run_once(cmds[c], &ms, &rss) != 0) {
				fprintf(stderr, "bench_boot: %s failed\n", cmds[c][0]);
				return 1;
			}
			if (k < 0)
				continue;
			t[c * n + k] = ms;
			if (rss > res[c].maxrss_kib)
				res[c].maxrss_kib = rss;
		}
	}
	if (raw) {
		print_raw(res, t, nres, n);
		free(t);
		return 0;
	}
	for (int c = 0; c < nres; c++) {
		qsort(t + c * n, (size_t)n, sizeof *t, cmp);
		res[c].min_ms = t[c * n];
		res[c].med_ms = t[c * n + n / 2];
	}
	printf("| command | min ms | median ms | median beyond first row | median / last row | max RSS KiB |\n");
	printf("|---|---|---|---|---|---|\n");
	for (int k = 0; k < nres; k++)
		printf("| %s | %.2f | %.2f | %+.2f ms | %.2fx | %ld |\n", res[k].label,
		       res[k].min_ms, res[k].med_ms, res[k].med_ms - res[0].med_ms,
		       res[k].med_ms / res[nres - 1].med_ms, res[k].maxrss_kib);
	free(t);
	return 0;
}

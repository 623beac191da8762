/*
 * runstat_bench.c: run a command and record what it cost, for the
 * comparison suites (bench/suites/compare.sh). /usr/bin/time reports CPU
 * and wall time in hundredths of a second; this wrapper reports
 * microseconds, which short benchmark runs need.
 *
 * Usage: runstat_bench -o FILE [-q] -- CMD [ARGS...]
 *
 * Runs CMD (PATH lookup) with the wrapper's environment, waits for it and
 * writes one line to FILE:
 *
 *     wall_s user_s sys_s maxrss_kb status
 *
 * wall_s is CLOCK_MONOTONIC from fork to reaping; user_s, sys_s and
 * maxrss_kb come from getrusage(RUSAGE_CHILDREN), so they include every
 * descendant the command waited for (heaptrack's interpreter process,
 * valgrind's tool): the whole cost a user pays. status is the exit status,
 * or 128 + N if CMD died of signal N. -q sends CMD's stdout to /dev/null
 * (stderr is kept, for error messages). The wrapper exits with CMD's status;
 * 127 if CMD could not be started, 1 for a usage error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/bench_util.h"

static double tv_seconds(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec * 1e-6;
}

static int usage(void)
{
	fprintf(stderr, "usage: runstat_bench -o FILE [-q] -- CMD [ARGS...]\n");
	return 1;
}

int main(int argc, char **argv)
{
	const char *out = NULL;
	int quiet = 0, i = 1;
	for (; i < argc; i++) {
		if (!strcmp(argv[i], "-o") && i + 1 < argc)
			out = argv[++i];
		else if (!strcmp(argv[i], "-q"))
			quiet = 1;
		else if (!strcmp(argv[i], "--")) {
			i++;
			break;
		} else
			return usage();
	}
	if (!out || i >= argc)
		return usage();
	FILE *f = fopen(out, "w");
	if (!f) {
		fprintf(stderr, "runstat_bench: cannot write %s: %s\n", out, strerror(errno));
		return 1;
	}
	double t0 = bench_now();
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "runstat_bench: fork: %s\n", strerror(errno));
		return 127;
	}
	if (pid == 0) {
		if (quiet) {
			int fd = open("/dev/null", O_WRONLY);
			if (fd >= 0 && dup2(fd, STDOUT_FILENO) < 0)
				_exit(127);
		}
		execvp(argv[i], argv + i);
		fprintf(stderr, "runstat_bench: cannot run %s: %s\n", argv[i], strerror(errno));
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			fprintf(stderr, "runstat_bench: waitpid: %s\n", strerror(errno));
			return 127;
		}
	double wall = bench_now() - t0;
	struct rusage ru;
	getrusage(RUSAGE_CHILDREN, &ru);
	int status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	fprintf(f, "%.6f %.6f %.6f %ld %d\n", wall, tv_seconds(ru.ru_utime),
		tv_seconds(ru.ru_stime), ru.ru_maxrss, status);
	if (fclose(f)) {
		fprintf(stderr, "runstat_bench: writing %s: %s\n", out, strerror(errno));
		return 1;
	}
	return status;
}

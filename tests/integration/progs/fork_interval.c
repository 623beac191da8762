/*
 * fork_interval.c: a parent that samples, then a child that only allocates
 * for a while and leaves with _exit, for the interval-dump case of
 * tests/integration/preload_triggers_test.sh (run with dump_at_exit=0, so
 * every profile of the child's pid is one of its own dumper thread's).
 * Prints the child's pid.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Allocate and free 4 KiB blocks for `seconds`. */
static void churn(double seconds)
{
	double end = now() + seconds;
	while (now() < end)
		for (int i = 0; i < 1000; i++) {
			char *p = malloc(4096);
			if (!p)
				_exit(2);
			p[0] = (char)i;
			free(p);
		}
}

int main(void)
{
	churn(0.3); /* the parent's samples: its dumper state is settled */
	pid_t c = fork();
	if (c < 0)
		return 1;
	if (c == 0) {
		churn(1.0);
		_exit(0);
	}
	int st;
	if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 1;
	printf("%ld\n", (long)c);
	return 0;
}

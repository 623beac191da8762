/*
 * exit_status.c: end in a chosen way after allocating a little, so the
 * tests can check that `allocprof run` passes exit statuses and signal
 * deaths through, and forwards signals sent to it.
 *
 *   exit_status exit N     exit(N)
 *   exit_status signal N   raise(N) (with the default action restored)
 *   exit_status wait       print "ready" and wait for a signal; SIGTERM
 *                          and SIGINT keep their default action (death)
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *churn(void)
{
	void *keep = NULL;
	for (int i = 0; i < 10000; i++) {
		free(keep);
		keep = malloc(64 + (size_t)i % 256);
		if (!keep)
			exit(2);
	}
	return keep;
}

int main(int argc, char **argv)
{
	void *kept = churn();
	if (argc == 3 && !strcmp(argv[1], "exit")) {
		exit(atoi(argv[2]));
	}
	if (argc == 3 && !strcmp(argv[1], "signal")) {
		int sig = atoi(argv[2]);
		signal(sig, SIG_DFL);
		raise(sig);
		return 100; /* not reached for fatal signals */
	}
	if (argc == 2 && !strcmp(argv[1], "wait")) {
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		printf("ready\n");
		fflush(stdout);
		for (int i = 0; i < 600; i++)
			sleep(1);
		free(kept);
		return 101; /* the test's signal never came */
	}
	fprintf(stderr, "usage: exit_status exit N | signal N | wait\n");
	return 64;
}

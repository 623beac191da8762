/*
 * forker.c: fork under the profiler. While a second thread keeps
 * allocating (so a fork can land in the middle of the runtime's bookkeeping),
 * the main thread forks NCHILD children. Each child allocates after the fork
 * (including blocks inherited from the parent that it frees), prints a line
 * and exits normally, so it writes its own profile. One more child is
 * started with posix_spawn (vfork + exec) running `true`, to exercise the
 * exec path. The parent checks every child's exit status.
 *
 * Output is deterministic: the same lines, in order, profiled or not.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NCHILD 3

extern char **environ;

static atomic_int stop_churn;

static void *churn(void *arg)
{
	(void)arg;
	size_t i = 0;
	while (!atomic_load(&stop_churn)) {
		void *p = malloc(16 + i % 2000);
		if (!p)
			exit(2);
		memset(p, 0, 16);
		free(p);
		i++;
	}
	return NULL;
}

static long child_work(int k, char **inherited, int n)
{
	long sum = 0;
	for (int i = 0; i < n; i++) /* blocks allocated before the fork */
		free(inherited[i]);
	for (int i = 0; i < 20000; i++) {
		size_t size = 32 + (size_t)((i * 7 + k) % 1000);
		char *p = malloc(size);
		if (!p)
			exit(2);
		p[0] = (char)i;
		sum += p[0] + (long)size;
		if (i % 100)
			free(p);
	}
	char *big = malloc(4u << 20); /* certain to be sampled at any rate */
	if (!big)
		exit(2);
	big[0] = 1;
	free(big);
	return sum;
}

int main(void)
{
	pthread_t t;
	char *inherited[100];
	for (int i = 0; i < 100; i++)
		if (!(inherited[i] = malloc(200)))
			return 2;
	if (pthread_create(&t, NULL, churn, NULL)) {
		fprintf(stderr, "forker: pthread_create failed\n");
		return 2;
	}
	int failures = 0;
	for (int k = 0; k < NCHILD; k++) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid < 0) {
			perror("forker: fork");
			return 2;
		}
		if (pid == 0) {
			long sum = child_work(k, inherited, 100);
			printf("forker: child %d sum %ld\n", k, sum);
			exit(0);
		}
		int st;
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
		    WEXITSTATUS(st)) {
			fprintf(stderr, "forker: child %d failed (status %#x)\n",
				k, st);
			failures++;
		}
	}
	pid_t sp;
	char *targv[] = {(char *)"true", NULL};
	int rc = posix_spawnp(&sp, "true", NULL, NULL, targv, environ);
	int st = 0;
	if (rc || waitpid(sp, &st, 0) != sp || !WIFEXITED(st) ||
	    WEXITSTATUS(st)) {
		fprintf(stderr, "forker: posix_spawn of true failed\n");
		failures++;
	}
	atomic_store(&stop_churn, 1);
	pthread_join(t, NULL);
	for (int i = 0; i < 100; i++)
		free(inherited[i]);
	printf("forker: parent done, %d failures\n", failures);
	return failures ? 1 : 0;
}

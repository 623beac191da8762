/*
 * fork_bench.c: what each child of a fork-per-request server costs
 * (bench/suites/fork.sh). The parent keeps a heap of its own (so children
 * inherit live blocks, sampled ones among them), then forks CHILDREN
 * children one after another; each allocates BYTES in 16 KiB blocks,
 * touches them and exits through exit() (so the runtime writes its
 * profile), and the parent waits for it before the next fork.
 *
 *   fork_bench CHILDREN BYTES
 *
 * Prints "children=N seconds=S per_child_us=U": the wall time of the fork
 * loop alone (start-up and the parent's own exit are outside it).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BLOCK (16 * 1024)
#define PARENT_BYTES (8u << 20)

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void **heap(size_t bytes, size_t *n)
{
	*n = bytes / BLOCK;
	void **v = calloc(*n ? *n : 1, sizeof *v);
	if (!v)
		exit(2);
	for (size_t i = 0; i < *n; i++) {
		v[i] = malloc(BLOCK);
		if (!v[i])
			exit(2);
		memset(v[i], (int)i, 64);
	}
	return v;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: fork_bench CHILDREN BYTES\n");
		return 1;
	}
	long children = atol(argv[1]);
	long bytes = atol(argv[2]);
	if (children <= 0 || bytes < 0) {
		fprintf(stderr, "fork_bench: CHILDREN must be positive and BYTES not negative\n");
		return 1;
	}
	size_t np;
	void **parent = heap(PARENT_BYTES, &np);
	double t0 = now();
	for (long i = 0; i < children; i++) {
		fflush(stdout);
		pid_t c = fork();
		if (c < 0) {
			perror("fork_bench: fork");
			return 3;
		}
		if (c == 0) {
			size_t n;
			heap((size_t)bytes, &n);
			exit(0);
		}
		int st;
		if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "fork_bench: child %ld failed\n", i);
			return 4;
		}
	}
	double s = now() - t0;
	printf("children=%ld seconds=%.6f per_child_us=%.1f\n", children, s,
	       s * 1e6 / (double)children);
	for (size_t i = 0; i < np; i++)
		free(parent[i]);
	free(parent);
	return 0;
}

/*
 * http_workload.c: a long-running program for the HTTP endpoint's
 * integration tests. It allocates at recognisable sites, prints output that
 * does not depend on timing (so a profiled run can be compared with a plain
 * one byte for byte), and runs until a stop file appears (or a time limit).
 *
 *   http_workload STOPFILE [MAX_SECONDS [fork|idle]]
 *
 * Phase 1 keeps 64 buffers of 64 KiB alive (retain_buffers) and prints a
 * checksum. Phase 2 churns small nodes (churn_nodes: allocated and freed)
 * every 10 ms until STOPFILE exists. With "fork", a child is forked after
 * phase 1 that prints its pid ("child PID" on stderr), allocates a little
 * and waits for the stop file too; the parent reaps it. With "idle", phase 2
 * allocates nothing (a profiler's own allocations would then show up as
 * new samples). Exit status 0, or
 * 3 when the time limit passed first (the test then failed to stop it).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NBUF 64
#define BUF_SIZE 65536

static unsigned char *kept[NBUF];

__attribute__((noinline)) static uint64_t retain_buffers(void)
{
	uint64_t sum = 0;
	for (int i = 0; i < NBUF; i++) {
		kept[i] = malloc(BUF_SIZE);
		if (!kept[i])
			exit(2);
		memset(kept[i], i, BUF_SIZE);
		sum += kept[i][i] + (uint64_t)i * BUF_SIZE;
	}
	return sum;
}

struct node {
	struct node *next;
	char pad[40];
};

__attribute__((noinline)) static size_t churn_nodes(int n)
{
	struct node *head = NULL;
	size_t count = 0;
	for (int i = 0; i < n; i++) {
		struct node *x = malloc(sizeof *x + (size_t)(i % 7) * 16);
		if (!x)
			exit(2);
		x->next = head;
		head = x;
	}
	while (head) {
		struct node *next = head->next;
		free(head);
		head = next;
		count++;
	}
	return count;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Churn (or idle) until stop exists; false if max_s passed first. */
static int run_until(const char *stop, double max_s, int idle)
{
	double t0 = now_s();
	struct timespec pause = { 0, 10 * 1000 * 1000 };
	while (access(stop, F_OK) != 0) {
		if (now_s() - t0 > max_s)
			return 0;
		if (!idle)
			churn_nodes(2000);
		nanosleep(&pause, NULL);
	}
	return 1;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: http_workload STOPFILE [MAX_SECONDS [fork|idle]]\n");
		return 1;
	}
	double max_s = argc > 2 ? atof(argv[2]) : 60;
	int do_fork = argc > 3 && strcmp(argv[3], "fork") == 0;
	int idle = argc > 3 && strcmp(argv[3], "idle") == 0;
	printf("retained checksum %llu\n", (unsigned long long)retain_buffers());
	printf("churned %zu\n", churn_nodes(1000));
	fflush(stdout);
	pid_t child = -1;
	if (do_fork) {
		child = fork();
		if (child < 0)
			return 2;
		if (child == 0) {
			fprintf(stderr, "child %ld\n", (long)getpid());
			churn_nodes(100);
			_exit(run_until(argv[1], max_s, 0) ? 0 : 3);
		}
	}
	int ok = run_until(argv[1], max_s, idle);
	if (child > 0) {
		int st;
		if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			ok = 0;
	}
	for (int i = 0; i < NBUF; i++)
		free(kept[i]);
	printf("stopped\n");
	return ok ? 0 : 3;
}

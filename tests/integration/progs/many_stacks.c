/*
 * many_stacks.c: 2^D distinct call stacks, each allocating and freeing one
 * block, then one explicit profile (ap_runtime_dump, found with dlsym so
 * the program also runs without the runtime). Prints the resident memory
 * (VmRSS, kB) at the start, after the allocations and after the dump, for
 * tests/integration/preload_memory_test.sh:
 *
 *   many_stacks D PATH     -> "rss START AFTER_ALLOCS AFTER_DUMP"
 *
 * Stack k goes through D calls of left() or right() chosen by the bits of k,
 * so every stack differs in at least one return address.
 */
#define _GNU_SOURCE
#include "proc_status.h"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void descend(int depth, unsigned bits);
static void *volatile sink;

__attribute__((noinline)) static void left(int d, unsigned b)
{
	descend(d, b);
	__asm__ volatile("");
}

__attribute__((noinline)) static void right(int d, unsigned b)
{
	descend(d, b);
	__asm__ volatile("");
}

__attribute__((noinline)) static void descend(int depth, unsigned bits)
{
	if (depth == 0) {
		void *p = malloc(64);
		sink = p;
		free(p);
		return;
	}
	if (bits & 1)
		left(depth - 1, bits >> 1);
	else
		right(depth - 1, bits >> 1);
	__asm__ volatile("");
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 1;
	int d = atoi(argv[1]);
	if (d < 1 || d > 24)
		return 1;
	long r0 = proc_status_kb("VmRSS:");
	for (unsigned k = 0; k < (1u << d); k++)
		descend(d, k);
	long r1 = proc_status_kb("VmRSS:");
	int (*dump)(const char *) = NULL;
	void *f = dlsym(RTLD_DEFAULT, "ap_runtime_dump");
	memcpy(&dump, &f, sizeof f);
	if (dump && dump(argv[2]) != 0)
		return 2;
	long r2 = proc_status_kb("VmRSS:");
	printf("rss %ld %ld %ld\n", r0, r1, r2);
	return 0;
}

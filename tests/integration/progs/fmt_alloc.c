/*
 * fmt_alloc.c: a program with a known live heap for pprof_tools_test.sh:
 * 2000 blocks of 4096 bytes from small_alloc and 20 blocks of 1 MiB from
 * big_alloc, all alive at exit, so a heap profiler's dump at exit (here
 * jemalloc's prof_final) has two dominant stacks of known size.
 */
#include <stdlib.h>
#include <string.h>

#define NSMALL 2000
#define NBIG 20

static void *keep[NSMALL + NBIG];

__attribute__((noinline)) static void *small_alloc(size_t n)
{
	void *p = malloc(n);
	if (p)
		memset(p, 1, n);
	return p;
}

__attribute__((noinline)) static void *big_alloc(size_t n)
{
	void *p = malloc(n);
	if (p)
		memset(p, 2, n);
	return p;
}

int main(void)
{
	for (int i = 0; i < NSMALL; i++)
		if (!(keep[i] = small_alloc(4096)))
			return 1;
	for (int i = 0; i < NBIG; i++)
		if (!(keep[NSMALL + i] = big_alloc(1 << 20)))
			return 1;
	/* Keep the blocks reachable until exit. */
	return ((volatile char *)keep[NSMALL])[0] == 2 ? 0 : 1;
}

/*
 * heap_layout.c: prints where glibc places a new thread's blocks, as
 * offsets from the thread's first block, so that two runs can be compared.
 *
 * glibc gives a new thread its own arena and reuses freed chunks of a size
 * (tcache) before carving new ones, so every block the thread allocates
 * and frees shifts the offsets of later blocks of that size. The profiler
 * must leave them as they are without it: anything it allocates through
 * the allocator underneath on the thread's behalf (the first sample's
 * look-up of the thread's stack was one) shows up here as a changed
 * offset. Under rate=1 every block is sampled, the first one included.
 *
 * Output: one line per block, "size offset".
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define NBLOCKS 24

static void *worker(void *arg)
{
	(void)arg;
	/* Sizes around those of small libc-internal blocks (a CPU set of
	 * 32 bytes, an attribute extension): their freed chunks are what a
	 * block of the program's would reuse. */
	static const size_t sizes[NBLOCKS] = { 100, 24, 32, 40, 16, 48, 64, 32,
					       24, 40, 128, 16, 32, 56, 24, 40,
					       200, 32, 16, 24, 48, 40, 32, 64 };
	char *first = malloc(sizes[0]);
	if (!first)
		return (void *)1;
	void *keep[NBLOCKS] = { first };
	long long off[NBLOCKS] = { 0 };
	for (int i = 1; i < NBLOCKS; i++) {
		char *p = malloc(sizes[i]);
		if (!p)
			return (void *)1;
		keep[i] = p;
		off[i] = (long long)((intptr_t)p - (intptr_t)first);
	}
	/* Printed after the last block: stdio's buffer comes after them. */
	for (int i = 0; i < NBLOCKS; i++)
		printf("%zu %lld\n", sizes[i], off[i]);
	for (int i = 0; i < NBLOCKS; i++)
		free(keep[i]);
	return NULL;
}

int main(void)
{
	pthread_t t;
	void *rc = NULL;
	if (pthread_create(&t, NULL, worker, NULL) != 0 || pthread_join(t, &rc) != 0) {
		fprintf(stderr, "heap_layout: cannot run the thread\n");
		return 1;
	}
	if (rc) {
		fprintf(stderr, "heap_layout: out of memory\n");
		return 1;
	}
	return fflush(stdout) == 0 ? 0 : 1;
}

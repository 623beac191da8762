/*
 * usable16.c: N allocations of 16 bytes in small16(), all live until
 * exit, for tests/integration/usable_sizes_test.sh: --usable must report
 * the allocator's usable size of a 16-byte request (24 on glibc, 16 on
 * jemalloc) times N, whether the sampled blocks came from the allocator
 * or from allocprof's own page-sized range.
 */
#include <stdlib.h>

#define N 400000

static void *blocks[N];

__attribute__((noinline)) static void small16(void)
{
	for (int i = 0; i < N; i++) {
		blocks[i] = malloc(16);
		if (!blocks[i])
			exit(2);
	}
}

int main(void)
{
	small16();
	for (int i = 0; i < N; i++)
		free(blocks[i]);
	return 0;
}

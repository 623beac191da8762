/*
 * grow_rss.c: resident memory that follows a script, for the rss_limit=
 * trigger (preload_rss_limit_test.sh). Usage: grow_rss MIB...
 * For each target in turn the program allocates (and touches) or frees
 * 4 MiB blocks, one every 20 ms, until it holds that many MiB, then waits
 * 300 ms: longer than the runtime's 100 ms check period, so every level
 * is seen. 4 MiB blocks are mmap'd by the allocators, so a free gives the
 * memory back at once. Prints "done" at the end.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BLOCK ((size_t)4 << 20)
#define MAX_BLOCKS 1024

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0)
		;
}

int main(int argc, char **argv)
{
	static void *blocks[MAX_BLOCKS];
	size_t n = 0;
	for (int i = 1; i < argc; i++) {
		size_t want = strtoull(argv[i], NULL, 10) * ((size_t)1 << 20) / BLOCK;
		if (want > MAX_BLOCKS)
			return 2;
		while (n != want) {
			if (n < want) {
				blocks[n] = malloc(BLOCK);
				if (!blocks[n])
					return 1;
				memset(blocks[n++], 1, BLOCK);
			} else {
				free(blocks[--n]);
			}
			pause_ms(20);
		}
		pause_ms(300);
	}
	puts("done");
	return 0;
}

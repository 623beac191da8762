/*
 * memshape.c: a process whose memory is known, for `report --memory`
 * (preload_memory_report_test.sh). Usage: memshape HEAP_MIB MMAP_MIB
 *   - allocates 2N blocks of 4096 bytes (N * 4096 = HEAP_MIB MiB), writes
 *     each, frees every other one: N live blocks (the heap) and N holes
 *     the allocator cannot give back (fragmentation), their neighbours
 *     being live;
 *   - maps MMAP_MIB MiB of anonymous memory with mmap and touches every
 *     page (memory outside the allocator);
 * prints "heap=BYTES holes=BYTES mmap=BYTES" and exits without freeing,
 * so the profile written at exit sees exactly that.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define BLOCK 4096

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: memshape HEAP_MIB MMAP_MIB\n");
		return 2;
	}
	size_t heap = strtoull(argv[1], NULL, 10) << 20;
	size_t map = strtoull(argv[2], NULL, 10) << 20;
	size_t n = heap / BLOCK;
	void **blocks = calloc(2 * n, sizeof *blocks);
	if (!blocks)
		return 1;
	for (size_t i = 0; i < 2 * n; i++) {
		blocks[i] = malloc(BLOCK);
		if (!blocks[i])
			return 1;
		memset(blocks[i], (int)(i & 0x7f) | 1, BLOCK);
	}
	for (size_t i = 0; i < 2 * n; i += 2)
		free(blocks[i]);
	if (map) {
		char *p = mmap(NULL, map, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return 1;
		memset(p, 1, map);
	}
	/* the pointer array is heap too: n * 2 * sizeof(void *) bytes */
	printf("heap=%zu holes=%zu mmap=%zu array=%zu\n", n * BLOCK, n * BLOCK, map,
	       2 * n * sizeof *blocks);
	return 0;
}

/*
 * alloc_limit.c: how much can this process allocate? With "chunks SIZE"
 * it mallocs blocks of SIZE bytes (untouched) until malloc returns NULL or
 * 16 GiB is reached, frees them and prints "chunks N" (the MiB it got). With
 * "huge N" it asks for one block of N bytes and prints "huge null" or
 * "huge block", freeing it. Exit 0 either way.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "chunks")) {
		size_t size = (size_t)strtoull(argv[2], NULL, 10);
		if (size < 4096) {
			fprintf(stderr, "alloc_limit: SIZE below 4096\n");
			return 64;
		}
		/* The list of blocks is made of the blocks themselves. */
		void *head = NULL;
		size_t n = 0, max = ((size_t)16 << 30) / size;
		void **b;
		while (n < max && (b = malloc(size))) {
			*b = head;
			head = b;
			n++;
		}
		while (head) {
			b = head;
			head = *b;
			free(b);
		}
		printf("chunks %zu\n", (size_t)((unsigned long long)n * size >> 20));
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "huge")) {
		void *p = malloc((size_t)strtoull(argv[2], NULL, 10));
		printf("huge %s\n", p ? "block" : "null");
		free(p);
		return 0;
	}
	fprintf(stderr, "usage: alloc_limit chunks SIZE | huge BYTES\n");
	return 64;
}

/*
 * realloc_growth.c: a buffer grown from 1 MiB to 8 MiB in 4 KiB realloc
 * steps, as an in-memory download grows. Counts how often the block moved
 * (its address changed: the bytes were copied, unless the allocator
 * remapped them) and the bytes it held at each move, then checks the
 * contents survived.
 * Prints "moves M moved_bytes B final F" and exits 0.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
	size_t n = (size_t)1 << 20, step = 4096, final = (size_t)8 << 20;
	unsigned char *p = malloc(n);
	if (!p)
		return 2;
	memset(p, 0xa5, n);
	unsigned long moves = 0;
	unsigned long long moved = 0;
	while (n < final) {
		unsigned char *q = realloc(p, n + step);
		if (!q)
			return 2;
		if (q != p) {
			moves++;
			moved += n;
		}
		memset(q + n, (int)(n / step) & 0xff, step);
		p = q;
		n += step;
	}
	for (size_t i = (size_t)1 << 20; i < n; i += step)
		if (p[i] != ((i / step) & 0xff) || p[i - 1] != (i == (size_t)1 << 20 ? 0xa5 : ((i / step - 1) & 0xff)))
			return 3;
	printf("moves %lu moved_bytes %llu final %zu\n", moves, moved, n);
	free(p);
	return 0;
}

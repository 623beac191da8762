/*
 * view_sites.c: a program with a few named allocation sites whose bytes are
 * known exactly, for the diff/flame/folded tests that run it under the real
 * runtime (allocprof run). Built with -fno-inline, so each site is a frame.
 *
 *   keep_nodes     1000 x malloc(64), kept to exit       (alloc = inuse)
 *   churn_buffers  16 x malloc(1 MiB), each freed        (alloc only)
 *   keep_table     1 x calloc(100, 256), kept to exit
 *
 * Usage: view_sites [SCALE]  -- keep_nodes allocates SCALE times as many
 * nodes (default 1), so two runs differ at exactly one site.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *volatile sink;

static void **keep_nodes(unsigned scale)
{
	size_t n = 1000u * scale;
	void **nodes = calloc(n, sizeof *nodes);
	if (!nodes)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		nodes[i] = malloc(64);
		if (nodes[i])
			memset(nodes[i], 1, 64);
	}
	return nodes;
}

static void churn_buffers(void)
{
	for (int i = 0; i < 16; i++) {
		char *b = malloc(1 << 20);
		if (b)
			b[i] = 1;
		sink = b;
		free(b);
	}
}

static void *keep_table(void)
{
	return calloc(100, 256);
}

int main(int argc, char **argv)
{
	unsigned scale = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 1;
	if (scale < 1 || scale > 100) {
		fprintf(stderr, "usage: view_sites [SCALE 1..100]\n");
		return 1;
	}
	void **nodes = keep_nodes(scale);
	churn_buffers();
	void *table = keep_table();
	sink = table;
	sink = nodes;
	return nodes && table ? 0 : 1;
}

/*
 * inline_chain.c: allocations inlined two levels deep, for
 * inline_chain_test.sh. Built -O2 -g (tests/integration/CMakeLists.txt):
 * leaf (the malloc) is inlined twice into mid, mid into top, which main
 * calls. Each of the two mallocs has a size of its own; the program writes
 * to argv[1] the stack each one's symbolized stack must begin with, one
 * "expect SIZE FUNCTION LINE INLINED(0|1) ..." line per malloc: the
 * innermost frame at the line of the malloc, then each function it was
 * inlined into at the line of the call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int line_malloc, line_first_leaf, line_second_leaf, line_mid, line_top;
static char *volatile sink[2];

static inline __attribute__((always_inline)) char *leaf(size_t n)
{
	char *p = malloc(n); line_malloc = __LINE__;
	if (p)
		memset(p, 1, n);
	return p;
}

static inline __attribute__((always_inline)) void mid(void)
{
	sink[0] = leaf(2121); line_first_leaf = __LINE__;
	sink[1] = leaf(4242); line_second_leaf = __LINE__;
}

__attribute__((noinline)) static void top(void)
{
	mid(); line_mid = __LINE__;
	sink[0][1] = sink[1][1];
}

int main(int argc, char **argv)
{
	FILE *f = argc > 1 ? fopen(argv[1], "w") : NULL;
	if (!f) {
		fprintf(stderr, "usage: inline_chain EXPECT_FILE\n");
		return 2;
	}
	top(); line_top = __LINE__;
	fprintf(f, "expect 2121 leaf %d 1 mid %d 1 top %d 0 main %d 0\n", line_malloc,
		line_first_leaf, line_mid, line_top);
	fprintf(f, "expect 4242 leaf %d 1 mid %d 1 top %d 0 main %d 0\n", line_malloc,
		line_second_leaf, line_mid, line_top);
	free(sink[0]);
	free(sink[1]);
	return fclose(f) ? 1 : 0;
}

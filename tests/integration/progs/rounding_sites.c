/*
 * rounding_sites.c: many profile lines of one sample each, for
 * tests/integration/rounding_sites_test.sh. leaf() allocates one object of
 * each size 17..31 bytes (each size its own size class) at each of
 * DEPTHS recursion depths (each a distinct stack): DEPTHS x 15 lines. At
 * rate 16 an object of 17..31 bytes is sampled with probability 0.67..0.87,
 * so a sampled line's weight 1/pi lies in (1, 2): the values a profile
 * writes for it must not round those weights to 1. Everything is freed
 * before exit: the in-use view of leaf has no sample at all.
 */
#include <stdlib.h>

#define DEPTHS 60
#define NSIZES 15

static void *blocks[DEPTHS * NSIZES];
static int nblocks;

__attribute__((noinline)) static void leaf(void)
{
	for (int z = 17; z < 17 + NSIZES; z++) {
		void *p = malloc((size_t)z);
		if (!p)
			exit(2);
		blocks[nblocks++] = p;
	}
}

/* d more frames above leaf: a distinct stack per depth */
__attribute__((noinline)) static int down(int d)
{
	if (d == 0) {
		leaf();
		return 0;
	}
	return down(d - 1) + 1; /* not a tail call: the frame stays */
}

int main(void)
{
	int sum = 0;
	for (int d = 0; d < DEPTHS; d++)
		sum += down(d);
	for (int i = 0; i < nblocks; i++)
		free(blocks[i]);
	return sum == DEPTHS * (DEPTHS - 1) / 2 ? 0 : 3;
}

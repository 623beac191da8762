/*
 * usable_sizes.c: blocks of one size per function, all live until exit,
 * for tests/integration/usable_sizes_test.sh. Each function's site then
 * has a single request size n, so `report --usable` over `report` for it
 * must be exactly usable(n) / n of the allocator underneath, whether the
 * sampled blocks came from the allocator (rate 1) or from allocprof's
 * page-sized range (the runtime then works the usable size out without
 * allocating: nallocx, mi_good_size, glibc's chunk arithmetic).
 * Argument "big" adds blocks of 300,001 bytes (above glibc's first mmap
 * threshold, where the heap's and mmap's usable sizes differ: not for
 * glibc).
 */
#include <stdlib.h>
#include <string.h>

static void *keep[60000];
static size_t nkeep;

/* A macro, not a function: the site must be the SITE function itself
 * (an inlined helper would still be named by the symboliser). */
#define TAKE(n, count)                                                      \
	for (size_t i = 0; i < (count); i++) {                              \
		void *p = malloc(n);                                        \
		if (!p || nkeep == sizeof keep / sizeof keep[0])            \
			exit(2);                                            \
		memset(p, 1, (n) < 64 ? (n) : 64);                          \
		keep[nkeep++] = p;                                          \
	}

#define SITE(name, n, count) \
	__attribute__((noinline)) static void name(void) { TAKE(n, count) }

SITE(size100, 100, 30000)
SITE(size5000, 5000, 2000)
SITE(size70001, 70001, 300)
SITE(size300001, 300001, 100)

int main(int argc, char **argv)
{
	size100();
	size5000();
	size70001();
	if (argc > 1 && strcmp(argv[1], "big") == 0)
		size300001();
	for (size_t i = 0; i < nkeep; i++)
		free(keep[i]);
	return 0;
}

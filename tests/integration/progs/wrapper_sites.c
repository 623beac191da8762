/*
 * wrapper_sites.c: a program that allocates through its own wrapper, as
 * redis (zmalloc), nginx (ngx_alloc) and git (xmalloc) do, for
 * tests/integration/wrapper_hint_test.sh. Fixed bytes per caller:
 *   load_table   1000 x 1000 B through xalloc_bytes
 *   parse_input   500 x 2000 B through xalloc_bytes
 *   main           10 x 100000 B through pool_alloc_block (its only caller)
 *   index_rows    300 x 1000 B, itself called from two functions
 * xalloc_bytes is a wrapper reached from two callers; pool_alloc_block is
 * named like one but has a single caller; index_rows has two callers but
 * is not named like an allocator.
 */
#include <stdlib.h>
#include <string.h>

static void *keep[4096];
static size_t nkeep;

static void hold(void *p)
{
	if (!p)
		exit(2);
	memset(p, 1, 1);
	if (nkeep < sizeof keep / sizeof keep[0])
		keep[nkeep++] = p;
	else
		free(p);
}

__attribute__((noinline)) void *xalloc_bytes(size_t n)
{
	void *p = malloc(n);
	if (!p)
		exit(2);
	return p;
}

__attribute__((noinline)) void *pool_alloc_block(size_t n)
{
	return malloc(n);
}

__attribute__((noinline)) void index_rows(int n)
{
	for (int i = 0; i < n; i++)
		hold(malloc(1000));
}

__attribute__((noinline)) void load_table(void)
{
	for (int i = 0; i < 1000; i++)
		hold(xalloc_bytes(1000));
	index_rows(150);
}

__attribute__((noinline)) void parse_input(void)
{
	for (int i = 0; i < 500; i++)
		hold(xalloc_bytes(2000));
	index_rows(150);
}

int main(void)
{
	load_table();
	parse_input();
	for (int i = 0; i < 10; i++)
		hold(pool_alloc_block(100000));
	return 0;
}

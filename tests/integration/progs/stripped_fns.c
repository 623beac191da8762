/*
 * stripped_fns.c: allocation sites in file-local functions, each with two
 * call sites of malloc, for a copy stripped of every symbol table but the
 * dynamic one (stripped_functions_test.sh). Built without -rdynamic, so
 * nothing here is in .dynsym: only the unwind tables, which stripping
 * keeps, still know where each function starts.
 *
 *   stripped_fns        prints "NAME BYTES OBJECTS" for each function
 */
#include <stdio.h>
#include <stdlib.h>

static void *volatile keep[64];
static int nkeep;

static void hold(void *p)
{
	if (!p)
		exit(1);
	keep[nkeep++] = p;
}

__attribute__((noinline)) static void two_sites_a(int i)
{
	if (i & 1)
		hold(malloc(1000));
	else
		hold(malloc(3000));
	hold(malloc(100)); /* a third site: one call after the branch */
}

__attribute__((noinline)) static void two_sites_b(int i)
{
	hold(malloc(5000 + (size_t)i));
	if (i > 0)
		hold(malloc(7000));
}

int main(void)
{
	size_t a_bytes = 0, a_objs = 0, b_bytes = 0, b_objs = 0;
	for (int i = 0; i < 4; i++) {
		two_sites_a(i);
		a_bytes += (i & 1 ? 1000 : 3000) + 100;
		a_objs += 2;
		two_sites_b(i);
		b_bytes += 5000 + (size_t)i + (i > 0 ? 7000 : 0);
		b_objs += 1 + (i > 0);
	}
	printf("two_sites_a %zu %zu\ntwo_sites_b %zu %zu\n", a_bytes, a_objs, b_bytes, b_objs);
	return 0;
}

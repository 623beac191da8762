/*
 * jemalloc_api.c: a program linked against jemalloc that calls its own API
 * (mallocx, rallocx, xallocx, sallocx, dallocx, sdallocx, nallocx) on
 * blocks from malloc and from mallocx, as programs built for jemalloc do.
 * The blocks are 4 MiB, so at the default rate (512 KiB) nearly all are
 * sampled: the runtime must answer for its own blocks and never hand one
 * to jemalloc. Prints one line of sizes jemalloc reports the same way
 * with or without the runtime, then "jemalloc api ok"; exits 0.
 * Built only where jemalloc's headers are (else it exits 77).
 */
#if __has_include(<jemalloc/jemalloc.h>)
#include <jemalloc/jemalloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void need(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "jemalloc_api: %s\n", what);
		exit(2);
	}
}

int main(void)
{
	const size_t n = (size_t)4 << 20;
	size_t total = 0;
	for (int i = 0; i < 20; i++) {
		char *a = malloc(n);
		need(a != NULL, "malloc");
		memset(a, 1, n);
		need(sallocx(a, 0) >= n, "sallocx < size");
		need(xallocx(a, n, 0, 0) >= n, "xallocx < size");
		sdallocx(a, n, 0);
		char *b = malloc(n);
		need(b != NULL, "malloc");
		dallocx(b, 0);
		char *c = malloc(n);
		need(c != NULL, "malloc");
		memset(c, 3, n);
		c = rallocx(c, 2 * n, 0);
		need(c && c[n - 1] == 3, "rallocx lost data");
		c = rallocx(c, 3 * n, MALLOCX_ZERO);
		need(c && c[n - 1] == 3 && c[3 * n - 1] == 0, "rallocx zero");
		c = rallocx(c, n, MALLOCX_LG_ALIGN(12));
		need(c && ((uintptr_t)c & 4095) == 0 && c[n - 1] == 3, "rallocx align");
		free(c);
		char *d = mallocx(n, MALLOCX_ZERO | MALLOCX_LG_ALIGN(16));
		need(d && ((uintptr_t)d & 65535) == 0 && d[n - 1] == 0, "mallocx");
		d[0] = 4;
		d = realloc(d, 2 * n);
		need(d && d[0] == 4, "realloc of a mallocx block");
		sdallocx(d, 2 * n, 0);
		total += nallocx(n, 0);
	}
	printf("nallocx total %zu\njemalloc api ok\n", total);
	return 0;
}
#else
int main(void)
{
	return 77;
}
#endif

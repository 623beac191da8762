/*
 * tcmalloc_api.c: a program linked against tcmalloc that calls its tc_*
 * functions directly, on blocks from malloc and from tc_malloc/tc_new, as
 * programs built for tcmalloc do. The blocks are 4 MiB, so at the default
 * rate (512 KiB) nearly all are sampled: the runtime must answer for its
 * own blocks and never hand one to tcmalloc. Prints "tcmalloc api ok" and
 * exits 0. Built only where gperftools' headers are (else it exits 77).
 */
#if __has_include(<gperftools/tcmalloc.h>)
#include <gperftools/tcmalloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Declared by the header for C++ only; C linkage in the library. */
void *tc_new(size_t size);
void tc_delete(void *p);
void tc_delete_sized(void *p, size_t size);
void tc_deletearray_sized(void *p, size_t size);

static void need(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "tcmalloc_api: %s\n", what);
		exit(2);
	}
}

int main(void)
{
	const size_t n = (size_t)4 << 20;
	for (int i = 0; i < 20; i++) {
		char *a = malloc(n), *b = malloc(n), *c = malloc(n), *d = malloc(n);
		need(a && b && c && d, "malloc");
		memset(a, 1, n);
		need(tc_malloc_size(a) >= n, "tc_malloc_size < size");
		tc_free(a);
		tc_free_sized(b, n);
		tc_delete(c);
		tc_deletearray_sized(d, n);
		char *e = malloc(n);
		need(e != NULL, "malloc");
		e[n - 1] = 5;
		e = tc_realloc(e, 2 * n);
		need(e && e[n - 1] == 5, "tc_realloc lost data");
		tc_cfree(e);
		char *f = tc_malloc(n);
		need(f != NULL, "tc_malloc");
		free(f);
		char *g = tc_new(n);
		tc_delete_sized(g, n);
		void *h = NULL;
		need(tc_posix_memalign(&h, 4096, n) == 0, "tc_posix_memalign");
		free(h);
	}
	puts("tcmalloc api ok");
	return 0;
}
#else
int main(void)
{
	return 77;
}
#endif

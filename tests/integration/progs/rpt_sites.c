/*
 * rpt_sites.c: a program with known allocation sites for the report golden
 * test. Each site is its own non-inlined function so reports attribute
 * bytes to it; the byte and object counts are fixed (printed by --truth as
 * "function alloc_bytes alloc_objects inuse_bytes inuse_objects line"),
 * so a profile at rate=1 must report exactly these numbers.
 *
 * Two sites carry mangled assembler names, a C++ one and a Rust legacy one
 * (with its "::h<hash>" suffix), so demangling is checked without a C++ or
 * Rust compiler.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_NODES 5000
#define N_BUFS 64
#define N_BIG 3

static void *keep[N_NODES + N_BUFS + N_BIG + 16];
static size_t nkeep;
static int line_nodes, line_bufs, line_big, line_zeroed, line_cxx, line_rust;

__attribute__((noinline)) static void make_nodes(void)
{
	for (int i = 0; i < N_NODES; i++) {
		char *p = malloc(48); line_nodes = __LINE__;
		if (!p)
			exit(1);
		memset(p, i, 48);
		if (i % 2 == 0)
			keep[nkeep++] = p; /* half stay live */
		else
			free(p);
	}
}

__attribute__((noinline)) static void make_buffers(void)
{
	for (int i = 0; i < N_BUFS; i++) {
		char *p = malloc(4096); line_bufs = __LINE__;
		if (!p)
			exit(1);
		p[0] = (char)i;
		keep[nkeep++] = p;
	}
}

__attribute__((noinline)) static void make_big(void)
{
	for (int i = 0; i < N_BIG; i++) {
		char *p = malloc(1 << 20); line_big = __LINE__;
		if (!p)
			exit(1);
		p[0] = 1;
		free(p); /* none live */
	}
}

__attribute__((noinline)) static void make_zeroed(void)
{
	for (int i = 0; i < 10; i++) {
		char *p = calloc(25, 8); line_zeroed = __LINE__;
		if (!p)
			exit(1);
		keep[nkeep++] = p;
	}
}

/* ns::Parser::node(unsigned long) */
__attribute__((noinline)) void *cxx_node(size_t n) __asm__("_ZN2ns6Parser4nodeEm");
void *cxx_node(size_t n)
{
	void *p = malloc(n); line_cxx = __LINE__;
	return p;
}

/* server::cache::insert, Rust legacy mangling with its hash (a function
 * of the program's own crate: the standard library's are skipped) */
__attribute__((noinline)) void *rust_insert(size_t n)
	__asm__("_ZN6server5cache6insert17h0123456789abcdefE");
void *rust_insert(size_t n)
{
	void *p = malloc(n); line_rust = __LINE__;
	return p;
}

int main(int argc, char **argv)
{
	make_nodes();
	make_buffers();
	make_big();
	make_zeroed();
	keep[nkeep++] = cxx_node(24);
	keep[nkeep++] = rust_insert(40);
	if (argc > 1 && !strcmp(argv[1], "--truth")) {
		printf("make_nodes %d %d %d %d %d\n", 48 * N_NODES, N_NODES,
		       48 * (N_NODES / 2), N_NODES / 2, line_nodes);
		printf("make_buffers %d %d %d %d %d\n", 4096 * N_BUFS, N_BUFS,
		       4096 * N_BUFS, N_BUFS, line_bufs);
		printf("make_big %d %d %d %d %d\n", N_BIG << 20, N_BIG, 0, 0, line_big);
		printf("make_zeroed %d %d %d %d %d\n", 200 * 10, 10, 200 * 10, 10,
		       line_zeroed);
		printf("ns::Parser::node %d %d %d %d %d\n", 24, 1, 24, 1, line_cxx);
		printf("server::cache::insert %d %d %d %d %d\n", 40, 1, 40, 1, line_rust);
	}
	return 0;
}

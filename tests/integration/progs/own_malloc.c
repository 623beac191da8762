/*
 * own_malloc.c: a program with its own allocator linked in (a bump
 * allocator over mmap'd chunks, free a no-op). The executable's malloc
 * comes first in the dynamic linker's search, so a preloaded profiler's
 * malloc never sees a call: the runtime must say so rather than write an
 * empty profile silently (tests/integration/preload_blind_test.sh).
 *
 *   own_malloc          allocates 64 x 1 MiB through malloc, prints "ok"
 *   own_malloc private  maps 64 MiB with mmap and calls no malloc-family
 *                       function of its own: an allocator the program keeps
 *                       to itself
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define CHUNK ((size_t)64 << 20)

static unsigned char *chunk;
static size_t used, avail;

static void *bump(size_t n, size_t align)
{
	if (align < 16)
		align = 16;
	if (n > CHUNK / 2)
		return NULL;
	size_t start = (used + 16 + align - 1) & ~(align - 1);
	if (!chunk || start + n > avail) {
		chunk = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			     -1, 0);
		if (chunk == MAP_FAILED) {
			chunk = NULL;
			return NULL;
		}
		avail = CHUNK;
		start = (16 + align - 1) & ~(align - 1);
	}
	memcpy(chunk + start - 16, &n, sizeof n);
	used = start + n;
	return chunk + start;
}

static size_t size_of(void *p)
{
	size_t n;
	memcpy(&n, (unsigned char *)p - 16, sizeof n);
	return n;
}

void *malloc(size_t n) { return bump(n, 16); }
void free(void *p) { (void)p; }
void *calloc(size_t n, size_t m)
{
	if (m && n > SIZE_MAX / m)
		return NULL;
	return bump(n * m, 16); /* fresh mmap'd memory is zero */
}
void *realloc(void *p, size_t n)
{
	void *q = bump(n, 16);
	if (q && p) {
		size_t old = size_of(p);
		memcpy(q, p, old < n ? old : n);
	}
	return q;
}
int posix_memalign(void **out, size_t align, size_t n)
{
	void *p = bump(n, align);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}
void *aligned_alloc(size_t align, size_t n) { return bump(n, align); }
void *memalign(size_t align, size_t n) { return bump(n, align); }
void *valloc(size_t n) { return bump(n, 4096); }
void *pvalloc(size_t n) { return bump((n + 4095) & ~(size_t)4095, 4096); }
size_t malloc_usable_size(void *p) { return p ? size_of(p) : 0; }

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "private") == 0) {
		void *m = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return 2;
		memset(m, 1, CHUNK);
		static const char ok[] = "ok\n";
		return write(1, ok, sizeof ok - 1) == (ssize_t)sizeof ok - 1 ? 0 : 3;
	}
	for (int i = 0; i < 64; i++) {
		unsigned char *p = malloc((size_t)1 << 20);
		if (!p)
			return 2;
		memset(p, 1, (size_t)1 << 20);
	}
	printf("ok\n");
	return 0;
}

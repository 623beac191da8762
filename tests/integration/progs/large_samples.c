/*
 * large_samples.c: blocks of 64 KiB and more, the sampled ones of which the
 * runtime leaves with the allocator underneath (range_max) and finds again
 * at their free through the sampled set's granule filter; for
 * tests/integration/large_samples_test.sh.
 *
 * Each site function allocates COUNT blocks of 200,000 to 400,000 bytes
 * through one entry point (malloc, calloc, aligned_alloc, realloc from a
 * small block), keeps every third one and frees the others, interleaved
 * with small blocks that share the heap's granules (their frees must not
 * be taken for sampled ones). At exit it prints "live N range M": the live
 * large blocks, and how many of them bear the range's signature (page
 * aligned, usable size a whole number of pages; glibc's own mmapped blocks
 * are page aligned plus 16 bytes), then frees nothing more, so the
 * profile's in-use view must hold exactly the kept blocks.
 */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT 300
#define KEEP_EVERY 3

static void *kept[4 * COUNT];
static size_t nkept;
static void *small[4 * COUNT];
static size_t nsmall;

static size_t size_of(size_t i)
{
	return 200000 + (i * 7919) % 200000;
}

/* Write the block (first, last byte), keep or free it. */
static void settle(void *p, size_t n, size_t i)
{
	if (!p) {
		fprintf(stderr, "allocation of %zu bytes failed\n", n);
		exit(2);
	}
	((unsigned char *)p)[0] = 1;
	((unsigned char *)p)[n - 1] = 2;
	/* a small neighbour, freed later, in between */
	small[nsmall++] = malloc(64 + i % 512);
	if (i % KEEP_EVERY == 0)
		kept[nkept++] = p;
	else
		free(p);
}

__attribute__((noinline)) static void big_malloc(void)
{
	for (size_t i = 0; i < COUNT; i++)
		settle(malloc(size_of(i)), size_of(i), i);
}

__attribute__((noinline)) static void big_calloc(void)
{
	for (size_t i = 0; i < COUNT; i++) {
		size_t n = size_of(i);
		unsigned char *p = calloc(1, n);
		if (p && (p[n / 2] != 0 || p[n - 1] != 0)) {
			fprintf(stderr, "calloc block not zero\n");
			exit(2);
		}
		settle(p, n, i);
	}
}

__attribute__((noinline)) static void big_aligned(void)
{
	for (size_t i = 0; i < COUNT; i++) {
		size_t n = size_of(i) & ~(size_t)63;
		void *p = aligned_alloc(64, n);
		if (p && (uintptr_t)p % 64 != 0) {
			fprintf(stderr, "aligned_alloc(64) gave %p\n", p);
			exit(2);
		}
		settle(p, n, i);
	}
}

__attribute__((noinline)) static void big_realloc(void)
{
	for (size_t i = 0; i < COUNT; i++) {
		size_t n = size_of(i);
		char *p = malloc(32);
		if (!p)
			exit(2);
		memcpy(p, "grown", 6);
		char *q = realloc(p, n);
		if (q && memcmp(q, "grown", 6) != 0) {
			fprintf(stderr, "realloc lost the contents\n");
			exit(2);
		}
		settle(q, n, i);
	}
}

int main(void)
{
	big_malloc();
	big_calloc();
	big_aligned();
	big_realloc();
	for (size_t i = 0; i < nsmall; i++)
		free(small[i]);
	size_t range = 0;
	for (size_t i = 0; i < nkept; i++)
		if ((uintptr_t)kept[i] % 4096 == 0 && malloc_usable_size(kept[i]) % 4096 == 0)
			range++;
	printf("live %zu range %zu\n", nkept, range);
	return 0;
}

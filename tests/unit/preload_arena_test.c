/*
 * preload_arena_test.c: the runtime's mmap-backed allocator
 * (src/preload/arena.h): zeroing, alignment, reuse, growth, large blocks,
 * injected failures, its ap_allocator face, that destroying it gives
 * its memory back, and that a block freed into the wrong arena is refused.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "aptest.h"
#include "arena.h"

AP_TEST(blocks_are_zeroed_aligned_and_distinct)
{
	arena a;
	AP_CHECK_EQ_INT(arena_init(&a), 0);
	unsigned char *prev = NULL;
	for (size_t n = 0; n < 3000; n += 37) {
		unsigned char *p = arena_alloc(&a, n);
		AP_CHECK(p != NULL);
		AP_CHECK_EQ_U64((uintptr_t)p % 16, 0);
		AP_CHECK(arena_block_size(p) >= n);
		for (size_t i = 0; i < n; i++)
			AP_CHECK(p[i] == 0);
		memset(p, 0xab, n);
		AP_CHECK(p != prev);
		prev = p;
	}
	arena_destroy(&a);
}

AP_TEST(freed_blocks_are_reused_and_come_back_zeroed)
{
	arena a;
	arena_init(&a);
	unsigned char *p = arena_alloc(&a, 100);
	memset(p, 0xff, 100);
	size_t used = a.in_use;
	arena_free(&a, p);
	AP_CHECK(a.in_use < used);
	unsigned char *q = arena_alloc(&a, 90); /* same size class */
	AP_CHECK(q == p);
	for (size_t i = 0; i < 90; i++)
		AP_CHECK(q[i] == 0);
	arena_free(&a, NULL); /* allowed */
	arena_destroy(&a);
}

#ifdef NDEBUG
/* A block freed into an arena not its own is refused: neither arena's
 * count moves and the wrong arena never hands it out (debug builds stop at
 * arena_free's assertion instead, so this runs only without it). */
AP_TEST(a_block_freed_into_another_arena_is_refused)
{
	arena a, b;
	arena_init(&a);
	arena_init(&b);
	unsigned char *small = arena_alloc(&a, 100);
	unsigned char *large = arena_alloc(&a, 2 * ARENA_MAX_SMALL);
	unsigned char *mine = arena_alloc(&b, 100);
	AP_CHECK(small && large && mine);
	size_t ua = a.in_use, ub = b.in_use, mb = b.mapped;
	arena_free(&b, small);
	arena_free(&b, large);
	AP_CHECK_EQ_U64(a.in_use, ua);
	AP_CHECK_EQ_U64(b.in_use, ub);
	AP_CHECK_EQ_U64(b.mapped, mb);
	large[0] = 1; /* still mapped: not unmapped by b */
	unsigned char *next = arena_alloc(&b, 100);
	AP_CHECK(next != small);
	arena_free(&a, small);
	arena_free(&a, large);
	arena_free(&b, next);
	arena_free(&b, mine);
	AP_CHECK_EQ_U64(a.in_use, 0);
	AP_CHECK_EQ_U64(b.in_use, 0);
	arena_destroy(&a);
	arena_destroy(&b);
}
#endif

/* A reused block is zero over its whole class, not just the bytes asked
 * for: arena_realloc grows in place up to arena_block_size. */
AP_TEST(reused_blocks_are_zero_over_their_whole_class)
{
	arena a;
	arena_init(&a);
	unsigned char *p = arena_alloc(&a, 3000); /* class 4 KiB */
	size_t cap = arena_block_size(p);
	AP_CHECK(cap >= 3000);
	memset(p, 0x5a, cap);
	arena_free(&a, p);
	unsigned char *q = arena_alloc(&a, 2100); /* same class */
	AP_CHECK(q == p);
	for (size_t i = 0; i < cap; i++)
		AP_CHECK(q[i] == 0);
	arena_destroy(&a);
}

/* A block cut fresh from a chunk is not written: the pages of its class
 * the caller never reaches stay out of the process's resident set (the
 * runtime's dump asks for many sizes just over a power of two). */
AP_TEST(fresh_blocks_leave_unused_pages_untouched)
{
	long ps = sysconf(_SC_PAGESIZE);
	AP_CHECK(ps > 0);
	arena a;
	arena_init(&a);
	unsigned char *p = arena_alloc(&a, 32 * 1024 + 1); /* class 64 KiB */
	size_t cap = arena_block_size(p);
	AP_CHECK(cap >= 60 * 1024);
	/* Pages wholly past the request, before anything reads them. */
	uintptr_t from = ((uintptr_t)p + 32 * 1024 + 1 + (uintptr_t)ps - 1) &
			 ~((uintptr_t)ps - 1);
	uintptr_t to = ((uintptr_t)p + cap) & ~((uintptr_t)ps - 1);
	AP_CHECK(to > from);
	size_t pages = (to - from) / (size_t)ps;
	unsigned char vec[64];
	AP_CHECK(pages <= sizeof vec);
	AP_CHECK_EQ_INT(mincore((void *)from, to - from, vec), 0);
	size_t resident = 0;
	for (size_t i = 0; i < pages; i++)
		resident += vec[i] & 1;
	AP_CHECK_EQ_U64(resident, 0);
	for (size_t i = 0; i < cap; i++) /* and they read as zero */
		AP_CHECK(p[i] == 0);
	arena_destroy(&a);
}

AP_TEST(large_blocks_get_their_own_mapping)
{
	arena a;
	arena_init(&a);
	size_t big = 10 * ARENA_MAX_SMALL + 5;
	unsigned char *p = arena_alloc(&a, big);
	AP_CHECK(p != NULL);
	AP_CHECK(arena_block_size(p) >= big);
	p[big - 1] = 1;
	size_t mapped = a.mapped;
	arena_free(&a, p);
	AP_CHECK(a.mapped < mapped);
	AP_CHECK(arena_alloc(&a, SIZE_MAX - 8) == NULL); /* overflow, no crash */
	arena_destroy(&a);
}

AP_TEST(realloc_keeps_contents)
{
	arena a;
	arena_init(&a);
	unsigned char *p = arena_alloc(&a, 40);
	for (int i = 0; i < 40; i++)
		p[i] = (unsigned char)i;
	unsigned char *q = arena_realloc(&a, p, 200000);
	AP_CHECK(q != NULL);
	for (int i = 0; i < 40; i++)
		AP_CHECK(q[i] == (unsigned char)i);
	AP_CHECK(arena_realloc(&a, q, 10) == q); /* shrinking stays in place */
	arena_free(&a, q);
	arena_destroy(&a);
}

AP_TEST(injected_failures_return_null_and_leave_the_arena_usable)
{
	arena a;
	arena_init(&a);
	a.fail_countdown = 2;
	void *p1 = arena_alloc(&a, 10);
	void *p2 = arena_alloc(&a, 10);
	void *p3 = arena_alloc(&a, 10);
	AP_CHECK(p1 != NULL);
	AP_CHECK(p2 == NULL);
	AP_CHECK(p3 != NULL);
	a.fail_countdown = 1;
	AP_CHECK(arena_alloc(&a, 1 << 20) == NULL);
	AP_CHECK(arena_alloc(&a, 1 << 20) != NULL);
	arena_destroy(&a);
}

AP_TEST(works_as_an_ap_allocator)
{
	arena a;
	arena_init(&a);
	const ap_allocator *al = arena_allocator(&a);
	char *s = al->alloc(al->ctx, 6);
	AP_CHECK(s != NULL);
	memcpy(s, "hello", 6);
	s = al->realloc(al->ctx, s, 6, 5000);
	AP_CHECK(s != NULL && strcmp(s, "hello") == 0);
	al->free(al->ctx, s, 5000);
	arena_destroy(&a);
}

/* Dumps build their profile in a scratch arena and destroy it: every chunk
 * must go back to the kernel, or each dump's peak would stay resident. */
AP_TEST(destroy_unmaps_every_chunk)
{
	arena a;
	arena_init(&a);
	void *first = NULL;
	for (int i = 0; i < 1000; i++) { /* 4 MiB of 4 KiB blocks: 4+ chunks */
		void *p = arena_alloc(&a, 4000);
		AP_CHECK(p != NULL);
		if (!first)
			first = p;
	}
	AP_CHECK(a.mapped >= ((size_t)4 << 20));
	arena_destroy(&a);
	AP_CHECK_EQ_U64(a.mapped, 0);
	/* The first chunk's page is gone: msync refuses unmapped memory. */
	void *page = (void *)((uintptr_t)first & ~(uintptr_t)4095);
	errno = 0;
	AP_CHECK(msync(page, 4096, MS_ASYNC) != 0 && errno == ENOMEM);
}

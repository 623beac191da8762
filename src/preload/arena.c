/*
 * arena.c: mmap-backed size-class allocator for the runtime's bookkeeping
 * (see arena.h for why it exists and what it promises).
 *
 * Small blocks: class c holds 16 << c bytes including the 16-byte header;
 * they are bump-allocated from 1 MiB chunks and reused through free lists.
 * Chunks are returned only by arena_destroy, which finds them through a
 * list kept in each chunk's first 16 bytes: the dumps build their profile
 * in a scratch arena destroyed afterwards, so a profile's peak does not stay
 * resident on the long-lived arena's free lists. Large blocks: their own
 * mapping, the header records the mapping length so free can munmap it.
 */
#include "arena.h"

#include <assert.h>
#include <string.h>
#include <sys/mman.h>

#define HDR 16
#define CHUNK ((size_t)1 << 20)
#define CLASS_MASK UINT64_C(0xffffffff)
#define LARGE_TAG CLASS_MASK

/*
 * cls: the size class (or LARGE_TAG) in the low 32 bits; the owner's tag,
 * bits of the arena's address, in the high 32. A block freed into another
 * arena than its own would sit on that arena's free lists: a scratch
 * arena's block on the shared arena's lists is unmapped memory once the
 * scratch is destroyed, and the shared arena's block given to a scratch is
 * lost to it for good (the profile endpoint leaked the sites' copy so at
 * every request). arena_free refuses such a block: it stays where it is,
 * and debug builds stop at the assertion.
 */
typedef struct block_hdr {
	uint64_t cls;
	uint64_t size; /* class bytes or mapping length */
} block_hdr;

static uint64_t owner_tag(const arena *a)
{
	return (uint64_t)(uint32_t)((uintptr_t)a >> 4) << 32;
}

void *arena_map(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void arena_unmap(void *p, size_t n)
{
	if (p)
		munmap(p, n);
}

static void *a_alloc(void *ctx, size_t n)
{
	return arena_alloc(ctx, n);
}

static void *a_realloc(void *ctx, void *p, size_t old_n, size_t new_n)
{
	(void)old_n;
	return arena_realloc(ctx, p, new_n);
}

static void a_free(void *ctx, void *p, size_t n)
{
	(void)n;
	arena_free(ctx, p);
}

int arena_init(arena *a)
{
	if (!a)
		return AP_EINVAL;
	memset(a, 0, sizeof *a);
	pthread_mutex_init(&a->lock, NULL);
	a->allocator.alloc = a_alloc;
	a->allocator.realloc = a_realloc;
	a->allocator.free = a_free;
	a->allocator.ctx = a;
	return 0;
}

void arena_destroy(arena *a)
{
	/* Every chunk goes back; large blocks still allocated are the
	 * caller's leak. Reset the lists so a reuse starts clean. */
	if (!a)
		return;
	memset(a->free_lists, 0, sizeof a->free_lists);
	a->chunk_cur = a->chunk_end = NULL;
	while (a->chunks) {
		void *next;
		memcpy(&next, a->chunks, sizeof next);
		arena_unmap(a->chunks, CHUNK);
		a->mapped -= CHUNK;
		a->chunks = next;
	}
}

static unsigned size_class(size_t total)
{
	unsigned c = 0;
	while (((size_t)16 << c) < total)
		c++;
	return c;
}

static bool take_failure(arena *a)
{
	if (a->fail_countdown == 0)
		return false;
	return --a->fail_countdown == 0;
}

void *arena_alloc(arena *a, size_t n)
{
	if (n > SIZE_MAX - HDR - 4096)
		return NULL;
	size_t total = n + HDR;
	block_hdr *h;
	if (total > ARENA_MAX_SMALL) {
		size_t len = (total + 4095) & ~(size_t)4095;
		pthread_mutex_lock(&a->lock);
		bool fail = take_failure(a);
		pthread_mutex_unlock(&a->lock);
		if (fail)
			return NULL;
		h = arena_map(len);
		if (!h)
			return NULL;
		h->cls = owner_tag(a) | LARGE_TAG;
		h->size = len;
		pthread_mutex_lock(&a->lock);
		a->mapped += len;
		a->in_use += len;
		pthread_mutex_unlock(&a->lock);
		return (unsigned char *)h + HDR; /* fresh mappings are zero */
	}
	unsigned c = size_class(total);
	size_t csize = (size_t)16 << c;
	pthread_mutex_lock(&a->lock);
	if (take_failure(a)) {
		pthread_mutex_unlock(&a->lock);
		return NULL;
	}
	h = a->free_lists[c];
	bool reused = h != NULL;
	if (h) {
		void *next; /* the link is stored unaligned-safe: memcpy */
		memcpy(&next, (unsigned char *)h + HDR, sizeof next);
		a->free_lists[c] = next;
	} else {
		if ((size_t)(a->chunk_end - a->chunk_cur) < csize) {
			unsigned char *chunk = arena_map(CHUNK);
			if (!chunk) {
				pthread_mutex_unlock(&a->lock);
				return NULL;
			}
			a->mapped += CHUNK;
			/* The chunk list's link: the first HDR bytes. */
			memcpy(chunk, &a->chunks, sizeof a->chunks);
			a->chunks = chunk;
			a->chunk_cur = chunk + HDR;
			a->chunk_end = chunk + CHUNK;
		}
		h = (block_hdr *)(void *)a->chunk_cur;
		a->chunk_cur += csize;
	}
	a->in_use += csize;
	pthread_mutex_unlock(&a->lock);
	h->cls = owner_tag(a) | c;
	h->size = csize;
	/* A block cut from the chunk has never been written: the mapping's
	 * zero pages stand, and pages of a power-of-two class the caller
	 * never reaches are never touched (a 32 KiB+32 B request takes a
	 * 64 KiB block). Only a block from a free list needs clearing. */
	if (reused)
		memset((unsigned char *)h + HDR, 0, csize - HDR);
	return (unsigned char *)h + HDR;
}

size_t arena_block_size(const void *p)
{
	const block_hdr *h = (const block_hdr *)(const void *)((const unsigned char *)p - HDR);
	return h->size - HDR;
}

void arena_free(arena *a, void *p)
{
	if (!p)
		return;
	block_hdr *h = (block_hdr *)(void *)((unsigned char *)p - HDR);
	bool own = (h->cls & ~CLASS_MASK) == owner_tag(a);
	assert(own && "arena_free: a block of another arena");
	if (!own)
		return;
	if ((h->cls & CLASS_MASK) == LARGE_TAG) {
		size_t len = h->size;
		pthread_mutex_lock(&a->lock);
		a->mapped -= len;
		a->in_use -= len;
		pthread_mutex_unlock(&a->lock);
		arena_unmap(h, len);
		return;
	}
	unsigned c = (unsigned)(h->cls & CLASS_MASK);
	pthread_mutex_lock(&a->lock);
	*(void **)p = a->free_lists[c];
	a->free_lists[c] = h;
	a->in_use -= h->size;
	pthread_mutex_unlock(&a->lock);
}

void *arena_realloc(arena *a, void *p, size_t n)
{
	if (!p)
		return arena_alloc(a, n);
	size_t have = arena_block_size(p);
	if (n <= have)
		return p;
	void *q = arena_alloc(a, n);
	if (!q)
		return NULL;
	memcpy(q, p, have);
	arena_free(a, p);
	return q;
}

const ap_allocator *arena_allocator(arena *a)
{
	return &a->allocator;
}

void arena_lock(arena *a)
{
	pthread_mutex_lock(&a->lock);
}

void arena_unlock(arena *a)
{
	pthread_mutex_unlock(&a->lock);
}

void arena_reset_lock(arena *a)
{
	pthread_mutex_init(&a->lock, NULL);
}

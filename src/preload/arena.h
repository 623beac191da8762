/*
 * arena.h: the runtime's own memory, straight from mmap.
 *
 * The runtime must never call the malloc it intercepts (docs/DESIGN.md, "the
 * runtime's hard rules"), so stack tables, sampled-set tables, and the
 * profile built at dump time (including zlib's buffers) come from here. An
 * arena is a small size-class allocator: blocks up to ARENA_MAX_SMALL bytes
 * are carved from 1 MiB mmap'd chunks and recycled through per-class free
 * lists; larger blocks get their own mapping and go back with munmap.
 * Every block carries a 16-byte header with its size, so free needs no size,
 * and its arena's tag: arena_free refuses a block of another arena (it is
 * left where it is; debug builds stop at an assertion), since on the wrong
 * free list it would be leaked or, once its own arena is destroyed, be
 * unmapped memory handed out again.
 *
 * Thread-safe through one mutex (these are slow paths); arena_lock/unlock
 * exist for the pthread_atfork handlers. Memory is zeroed on allocation.
 */
#ifndef AP_PRELOAD_ARENA_H
#define AP_PRELOAD_ARENA_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allocprof/common.h"

#define ARENA_NCLASSES 13 /* 16 B .. 64 KiB, powers of two */
#define ARENA_MAX_SMALL ((size_t)65536)

typedef struct arena {
	pthread_mutex_t lock;
	void *free_lists[ARENA_NCLASSES];
	unsigned char *chunk_cur, *chunk_end;
	void *chunks;     /* newest chunk; each links the previous in its first word */
	size_t mapped;    /* bytes currently mapped (chunks + large blocks) */
	size_t in_use;    /* bytes handed out, headers included */
	ap_allocator allocator; /* ap_allocator view of this arena */
	/* Test hook: when nonzero, the n-th next allocation fails (1 = next). */
	unsigned fail_countdown;
} arena;

/* Set up an empty arena (maps nothing yet). 0 or AP_EINVAL. */
int arena_init(arena *a);
/* Unmap every chunk (large blocks must have been freed). Only when no
 * thread can use the arena any more. */
void arena_destroy(arena *a);

/* n zeroed bytes aligned to 16, or NULL (n = 0 gives a minimal block). */
void *arena_alloc(arena *a, size_t n);
/* Return a block (NULL is allowed). */
void arena_free(arena *a, void *p);
/* Resize keeping the contents; NULL on failure (p untouched). */
void *arena_realloc(arena *a, void *p, size_t n);
/* Usable bytes of a block from this arena. */
size_t arena_block_size(const void *p);

/* An ap_allocator that allocates from a (valid as long as a is). */
const ap_allocator *arena_allocator(arena *a);

void arena_lock(arena *a);
void arena_unlock(arena *a);
/* After fork in the child: the lock may be held by a vanished thread. */
void arena_reset_lock(arena *a);

/* mmap/munmap wrappers used by every runtime file (no libc malloc). */
void *arena_map(size_t n);
void arena_unmap(void *p, size_t n);

#endif

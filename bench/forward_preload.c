/*
 * forward_preload.c: the least any malloc interposer can cost, as a
 * reference row for bench/suites/runtime.sh.
 *
 * Preloaded like liballocprof_preload.so, it defines malloc, calloc,
 * realloc and free and does nothing in them but pass the call to the next
 * definition in the search order (glibc's, or jemalloc's when it is
 * preloaded after this object), found with dlsym(RTLD_NEXT). malloc
 * compiles to a load, a test and an indirect jump; free to a subtract and
 * compare (was the pointer from the small static pool below?) and an
 * indirect jump. The gap between a
 * program run alone and run under this object is the price of interposition
 * itself, which no sampling design behind the same symbols avoids.
 *
 * dlsym may itself allocate before the pointers are resolved: those
 * requests are served from the static pool, whose blocks free ignores.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The project builds with hidden visibility: without this, the four
 * functions would not be exported, and the preload would interpose
 * nothing (until 2026-11-28 it did not, and its row measured the program
 * alone). */
#define EXPORT __attribute__((visibility("default")))

static void *(*next_malloc)(size_t);
static void *(*next_calloc)(size_t, size_t);
static void *(*next_realloc)(void *, size_t);
static void (*next_free)(void *);

static _Alignas(16) unsigned char pool[64 * 1024];
static size_t pool_used;
static int resolving;

static void *pool_take(size_t n)
{
	n = (n + 15) & ~(size_t)15;
	if (n > sizeof pool - pool_used)
		return NULL;
	void *p = pool + pool_used;
	pool_used += n;
	return p; /* static storage: already zero */
}

static int in_pool(const void *p)
{
	return (uintptr_t)p - (uintptr_t)pool < sizeof pool;
}

static void resolve(void)
{
	if (resolving)
		return;
	resolving = 1;
	next_calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
	next_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
	next_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
	next_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
}

__attribute__((constructor)) static void forward_init(void)
{
	resolve();
}

EXPORT void *malloc(size_t n)
{
	if (__builtin_expect(!next_malloc, 0)) {
		resolve();
		if (!next_malloc)
			return pool_take(n);
	}
	return next_malloc(n);
}

EXPORT void *calloc(size_t k, size_t n)
{
	if (__builtin_expect(!next_calloc, 0)) {
		resolve();
		if (!next_calloc)
			return n && k > SIZE_MAX / n ? NULL : pool_take(k * n);
	}
	return next_calloc(k, n);
}

EXPORT void *realloc(void *p, size_t n)
{
	if (__builtin_expect(in_pool(p) || !next_realloc, 0)) {
		resolve();
		void *q = malloc(n);
		if (q && p) { /* a pool block, of unknown size: copy what fits */
			size_t room = sizeof pool - (size_t)((unsigned char *)p - pool);
			memcpy(q, p, n < room ? n : room);
		}
		return q;
	}
	return next_realloc(p, n);
}

EXPORT void free(void *p)
{
	if (__builtin_expect(in_pool(p), 0))
		return;
	next_free(p);
}

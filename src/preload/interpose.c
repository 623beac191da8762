/*
 * interpose.c: the malloc family exported by liballocprof_preload.so.
 *
 * Each entry point is the whole fast path (DESIGN.md, "the runtime's hard
 * rules"): an allocation subtracts its size from the thread's sampler
 * counter (initial-exec TLS) and, on the well-predicted not-sampled branch,
 * tail-calls the allocator underneath; a free looks the pointer up in the
 * lock-free sampled set and, almost always finding an empty slot, tail-calls
 * the real free. Everything else is in runtime.c behind AP_UNLIKELY.
 *
 * A thread's counter starts at 0, so its first allocation takes the slow
 * path, which initialises the runtime and the thread's sampler. Bootstrap
 * pool blocks (dlsym's calloc) are entries of the sampled set, so free
 * needs no second test for them.
 *
 * free_sized and free_aligned_sized (C23) are exported even though glibc
 * 2.36 does not declare them, so programs built against newer headers work.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_core.h"

#define EXPORT __attribute__((visibility("default")))

/* Prototypes for entry points glibc's headers may not declare. */
EXPORT void free_sized(void *p, size_t n);
EXPORT void free_aligned_sized(void *p, size_t align, size_t n);
EXPORT void *reallocarray(void *p, size_t n, size_t m);
EXPORT void *memalign(size_t align, size_t n);
EXPORT void *valloc(size_t n);
EXPORT void *pvalloc(size_t n);
EXPORT size_t malloc_usable_size(void *p);

static inline bool not_sampled(size_t n)
{
	return AP_LIKELY(!ap_sampler_should_sample(&rt_tls.sampler, n));
}

EXPORT void *malloc(size_t n)
{
	if (not_sampled(n))
		return rt_real.malloc(n);
	ap_sample_info info;
	if (!rt_sample_begin(n, &info))
		return rt_real.malloc(n);
	void *p = rt_real.malloc(n);
	rt_sample_end(p, &info);
	return p;
}

EXPORT void free(void *p)
{
	if (AP_UNLIKELY(set_contains(&rt_set, p))) {
		rt_free_sampled(p);
		return;
	}
	rt_real.free(p);
}

EXPORT void free_sized(void *p, size_t n)
{
	(void)n;
	free(p);
}

EXPORT void free_aligned_sized(void *p, size_t align, size_t n)
{
	(void)align;
	(void)n;
	free(p);
}

EXPORT void *calloc(size_t n, size_t m)
{
	size_t total;
	if (AP_UNLIKELY(__builtin_mul_overflow(n, m, &total))) {
		errno = ENOMEM;
		return NULL;
	}
	if (not_sampled(total))
		return rt_real.calloc(n, m);
	ap_sample_info info;
	if (!rt_sample_begin(total, &info))
		return rt_real.calloc(n, m);
	void *p = rt_real.calloc(n, m);
	rt_sample_end(p, &info);
	return p;
}

EXPORT void *realloc(void *p, size_t n)
{
	if (!p)
		return malloc(n);
	if (AP_UNLIKELY(set_contains(&rt_set, p)))
		return rt_realloc_sampled(p, n);
	if (not_sampled(n))
		return rt_real.realloc(p, n);
	ap_sample_info info;
	if (!rt_sample_begin(n, &info))
		return rt_real.realloc(p, n);
	void *q = rt_real.realloc(p, n);
	rt_sample_end(q, &info);
	return q;
}

EXPORT void *reallocarray(void *p, size_t n, size_t m)
{
	size_t total;
	if (__builtin_mul_overflow(n, m, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, total);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	if (not_sampled(n))
		return rt_real.posix_memalign(out, align, n);
	ap_sample_info info;
	if (!rt_sample_begin(n, &info))
		return rt_real.posix_memalign(out, align, n);
	int rc = rt_real.posix_memalign(out, align, n);
	rt_sample_end(rc == 0 ? *out : NULL, &info);
	return rc;
}

/* The aligned entry points that return the block share one shape. */
#define ALIGNED_ENTRY(name, params, args, size)                              \
	EXPORT void *name params                                             \
	{                                                                    \
		if (not_sampled(size))                                       \
			return rt_real.name args;                            \
		ap_sample_info info;                                         \
		if (!rt_sample_begin(size, &info))                           \
			return rt_real.name args;                            \
		void *p = rt_real.name args;                                 \
		rt_sample_end(p, &info);                                     \
		return p;                                                    \
	}

ALIGNED_ENTRY(aligned_alloc, (size_t align, size_t n), (align, n), n)
ALIGNED_ENTRY(memalign, (size_t align, size_t n), (align, n), n)
ALIGNED_ENTRY(valloc, (size_t n), (n), n)
ALIGNED_ENTRY(pvalloc, (size_t n), (n), n)

EXPORT size_t malloc_usable_size(void *p)
{
	if (!p)
		return 0;
	if (AP_UNLIKELY(set_contains(&rt_set, p)))
		return rt_usable_sampled(p);
	return rt_real.malloc_usable_size(p);
}

/*
 * interpose.c: the malloc family exported by liballocprof_preload.so.
 *
 * Each entry point is the whole fast path (docs/DESIGN.md, "the runtime's hard
 * rules"): an allocation subtracts its size from the thread's sampler
 * counter (initial-exec TLS) and, on the well-predicted not-sampled branch,
 * tail-calls the allocator underneath. A free loads the byte of the
 * pointer's 8 KiB window in the sampled set's filter (sampled_set.h),
 * nonzero where allocprof's own range (design 2, region.h) is claimed and
 * where a sampled block the allocator holds (design 1) starts, and, almost
 * always at zero, tail-calls the real free. Pointers of nonzero windows go
 * to rt_classify, which asks the granule's word, the range and the set
 * (runtime_core.h).
 * Everything else is in runtime.c behind AP_UNLIKELY.
 *
 * With range=1, a sampled allocation below range_max (64 KiB) is served
 * from the range when the thread's rate is at least RT_REGION_MIN_RATE
 * (rt_region_alloc); otherwise, and by default, by the allocator
 * underneath, and kept in the sampled set. Region
 * blocks are whole pages: malloc_usable_size reports allocprof's page
 * rounding for them, not the allocator's.
 *
 * A thread's counter starts at 0, so its first allocation takes the slow
 * path, which initialises the runtime and the thread's sampler. Bootstrap
 * pool blocks (dlsym's calloc) are inside the range, so free needs no
 * second test for them.
 *
 * free_sized and free_aligned_sized (C23) are exported even though glibc
 * 2.36 does not declare them, so programs built against newer headers work.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "boot.h"
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

/* The slow path's allocations that are not recorded: the scratch's
 * inside the runtime's own libc calls (boot.h), else the allocator
 * underneath's. */
static void *unrecorded_malloc(size_t n)
{
	void *p = boot_scratch_alloc(n, false);
	return p ? p : rt_real.malloc(n);
}

static void *unrecorded_calloc(size_t n, size_t m, size_t total)
{
	void *p = boot_scratch_alloc(total, true);
	return p ? p : rt_real.calloc(n, m);
}

EXPORT void *malloc(size_t n)
{
	if (not_sampled(n))
		return rt_real.malloc(n);
	ap_sample_info info;
	if (!rt_sample_begin(n, &info))
		return unrecorded_malloc(n);
	void *p = rt_region_alloc(n, 0, false);
	if (!p)
		p = rt_real.malloc(n);
	rt_sample_end(p, &info);
	return p;
}

EXPORT void free(void *p)
{
	if (AP_UNLIKELY(rt_maybe_ours(p))) {
		rt_free_slow(p);
		return;
	}
	rt_real.free(p);
}

EXPORT void free_sized(void *p, size_t n)
{
	(void)n;
	rt_entry_free(p);
}

EXPORT void free_aligned_sized(void *p, size_t align, size_t n)
{
	(void)align;
	(void)n;
	rt_entry_free(p);
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
		return unrecorded_calloc(n, m, total);
	/* Region pages are zero, fresh or reused (MADV_DONTNEED at free). */
	void *p = rt_region_alloc(total, 0, true);
	if (!p)
		p = rt_real.calloc(n, m);
	rt_sample_end(p, &info);
	return p;
}

EXPORT void *realloc(void *p, size_t n)
{
	if (!p)
		return rt_entry_malloc(n);
	if (AP_UNLIKELY(rt_maybe_ours(p))) {
		enum rt_owner o = rt_classify(p);
		if (o == RT_OWNER_RANGE)
			return rt_realloc_range(p, n);
		if (o == RT_OWNER_SET)
			return rt_realloc_sampled(p, n);
	}
	if (not_sampled(n))
		return rt_real.realloc(p, n);
	ap_sample_info info;
	if (!rt_sample_begin(n, &info))
		return rt_real.realloc(p, n);
	void *q = rt_region_move(p, n);
	if (!q)
		q = rt_real.realloc(p, n);
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
	return rt_entry_realloc(p, total);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	if (not_sampled(n))
		return rt_real.posix_memalign(out, align, n);
	ap_sample_info info;
	if (!rt_sample_begin(n, &info))
		return rt_real.posix_memalign(out, align, n);
	/* Only valid alignments go to the region; the allocator underneath
	 * reports EINVAL for the others. */
	void *p = align && align % sizeof(void *) == 0 ? rt_region_alloc(n, align, false) : NULL;
	int rc = 0;
	if (p)
		*out = p;
	else
		rc = rt_real.posix_memalign(out, align, n);
	rt_sample_end(rc == 0 ? *out : NULL, &info);
	return rc;
}

/* The aligned entry points that return the block share one shape. The
 * region serves power-of-two alignments (it refuses others, which then go
 * to the allocator underneath for its own answer); 0 = the page. */
#define ALIGNED_ENTRY(name, params, args, size, align)                       \
	EXPORT void *name params                                             \
	{                                                                    \
		if (not_sampled(size))                                       \
			return rt_real.name args;                            \
		ap_sample_info info;                                         \
		if (!rt_sample_begin(size, &info))                           \
			return rt_real.name args;                            \
		void *p = rt_region_alloc(size, align, false);               \
		if (!p)                                                      \
			p = rt_real.name args;                               \
		rt_sample_end(p, &info);                                     \
		return p;                                                    \
	}

ALIGNED_ENTRY(aligned_alloc, (size_t align, size_t n), (align, n), n, align ? align : 1)
ALIGNED_ENTRY(memalign, (size_t align, size_t n), (align, n), n, align ? align : 1)
ALIGNED_ENTRY(valloc, (size_t n), (n), n, 0)
ALIGNED_ENTRY(pvalloc, (size_t n), (n), n, 0)

EXPORT size_t malloc_usable_size(void *p)
{
	if (!p)
		return 0;
	if (AP_UNLIKELY(rt_maybe_ours(p)) && rt_classify(p) == RT_OWNER_RANGE)
		return rt_usable_range(p);
	return rt_real.malloc_usable_size(p);
}

/* The hidden names of the entry points above (runtime_core.h). glibc's
 * headers declare malloc and its family leaf, nothrow and malloc-like; the
 * aliases need not say so (a call through them is only optimised less). */
#pragma GCC diagnostic push
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmissing-attributes"
#endif
#define ENTRY_ALIAS(name) RT_HIDDEN_ALIAS(name, rt_entry_##name, #name)
ENTRY_ALIAS(malloc);
ENTRY_ALIAS(free);
ENTRY_ALIAS(free_sized);
ENTRY_ALIAS(calloc);
ENTRY_ALIAS(realloc);
ENTRY_ALIAS(posix_memalign);
ENTRY_ALIAS(memalign);
ENTRY_ALIAS(valloc);
ENTRY_ALIAS(pvalloc);
ENTRY_ALIAS(malloc_usable_size);
#pragma GCC diagnostic pop

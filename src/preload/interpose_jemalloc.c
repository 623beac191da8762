/*
 * interpose_jemalloc.c: jemalloc's non-standard API (mallocx, rallocx,
 * xallocx, sallocx, dallocx, sdallocx, nallocx), which programs linked
 * with -ljemalloc call directly.
 *
 * Without these wrappers jemalloc would be handed blocks of allocprof's
 * range (a sampled malloc block passed to sallocx, sdallocx, rallocx...)
 * and crash, and blocks it allocated through mallocx would never be
 * sampled. Each entry point that takes a pointer tests the range first
 * and answers for the runtime's own blocks itself; the allocating ones
 * have malloc's fast path. Everything else goes to jemalloc's own
 * function (interpose_next.h). When no jemalloc is underneath (a program
 * that probes for mallocx with a weak reference), they are emulated on
 * the malloc family, so such a probe sees a working API.
 */
#include <stdlib.h>
#include <string.h>

#include "interpose_next.h"

enum { MALLOCX, RALLOCX, XALLOCX, SALLOCX, DALLOCX, SDALLOCX, NALLOCX, JE_N };

static const char *const je_names[JE_N] = {
	"mallocx", "rallocx", "xallocx", "sallocx", "dallocx", "sdallocx", "nallocx",
};
static void *mallocx_stub(size_t n, int flags);
static void dallocx_stub(void *p, int flags);
static void sdallocx_stub(void *p, size_t n, int flags);
/* The fast paths (mallocx, dallocx, sdallocx) jump through their slots:
 * stubs until resolved. The other entry points resolve first. */
static rt_fn je[JE_N] = {
	[MALLOCX] = (rt_fn)mallocx_stub,
	[DALLOCX] = (rt_fn)dallocx_stub,
	[SDALLOCX] = (rt_fn)sdallocx_stub,
};
static rt_fn je_next[JE_N];
static _Atomic int je_state;

typedef void *(*mallocx_fn)(size_t, int);
typedef void *(*rallocx_fn)(void *, size_t, int);
typedef size_t (*xallocx_fn)(void *, size_t, size_t, int);
typedef size_t (*sallocx_fn)(const void *, int);
typedef void (*dallocx_fn)(void *, int);
typedef void (*sdallocx_fn)(void *, size_t, int);
typedef size_t (*nallocx_fn)(size_t, int);

/* jemalloc's flag bits: MALLOCX_LG_ALIGN(la) is la in the low 6 bits,
 * MALLOCX_ZERO is 0x40; the rest (tcache, arena) concern jemalloc alone. */
static size_t flag_align(int flags)
{
	unsigned la = (unsigned)flags & 0x3f;
	return la ? (size_t)1 << la : 0;
}

static bool flag_zero(int flags)
{
	return (flags & 0x40) != 0;
}

/* ---- emulations (no jemalloc underneath) ------------------------------- */

static void *fb_mallocx(size_t n, int flags)
{
	size_t al = flag_align(flags);
	void *p = NULL;
	if (al > 16) {
		if (rt_real.posix_memalign(&p, al, n) != 0)
			return NULL;
	} else {
		p = rt_real.malloc(n);
	}
	if (p && flag_zero(flags))
		memset(p, 0, n);
	return p;
}

static void *fb_rallocx(void *p, size_t n, int flags)
{
	size_t old = rt_real.malloc_usable_size(p);
	void *q;
	if (flag_align(flags) > 16) {
		q = fb_mallocx(n, flags & ~0x40);
		if (!q)
			return NULL;
		memcpy(q, p, old < n ? old : n);
		rt_real.free(p);
	} else {
		q = rt_real.realloc(p, n);
	}
	if (q && flag_zero(flags) && n > old)
		memset((char *)q + old, 0, n - old);
	return q;
}

static size_t fb_xallocx(void *p, size_t n, size_t extra, int flags)
{
	(void)n;
	(void)extra;
	(void)flags;
	return rt_real.malloc_usable_size(p);
}

static size_t fb_sallocx(const void *p, int flags)
{
	(void)flags;
	return rt_real.malloc_usable_size((void *)(uintptr_t)p);
}

static void fb_dallocx(void *p, int flags)
{
	(void)flags;
	rt_real.free(p);
}

static void fb_sdallocx(void *p, size_t n, int flags)
{
	(void)n;
	(void)flags;
	rt_real.free(p);
}

static size_t fb_nallocx(size_t n, int flags)
{
	(void)flags;
	return n;
}

static const rt_fn je_fallbacks[JE_N] = {
	(rt_fn)fb_mallocx, (rt_fn)fb_rallocx, (rt_fn)fb_xallocx, (rt_fn)fb_sallocx,
	(rt_fn)fb_dallocx, (rt_fn)fb_sdallocx, (rt_fn)fb_nallocx,
};

static void je_resolve(void)
{
	if (atomic_load_explicit(&je_state, memory_order_acquire) == 2)
		return;
	next_sym syms[JE_N];
	for (int k = 0; k < JE_N; k++)
		syms[k] = (next_sym){je_names[k], &je[k], &je_next[k], je_fallbacks[k]};
	next_resolve(&je_state, syms, JE_N);
}

__attribute__((constructor)) static void je_constructor(void)
{
	je_resolve();
}

/* ---- the entry points ---------------------------------------------------- */

EXPORT void *mallocx(size_t n, int flags);
EXPORT void *rallocx(void *p, size_t n, int flags);
EXPORT size_t xallocx(void *p, size_t n, size_t extra, int flags);
EXPORT size_t sallocx(const void *p, int flags);
EXPORT void dallocx(void *p, int flags);
EXPORT void sdallocx(void *p, size_t n, int flags);
EXPORT size_t nallocx(size_t n, int flags);
/* mallocx by a hidden name, as rt_entry_malloc (runtime_core.h). */
RT_HIDDEN void *rt_entry_mallocx(size_t n, int flags);

static __attribute__((noinline)) void *mallocx_slow(size_t n, int flags)
{
	je_resolve();
	ap_sample_info info;
	if (!rt_sample_begin(n, &info))
		return ((mallocx_fn)je[MALLOCX])(n, flags);
	void *p = rt_region_alloc(n, flag_align(flags), flag_zero(flags));
	if (!p)
		p = ((mallocx_fn)je[MALLOCX])(n, flags);
	rt_sample_end(p, &info);
	return p;
}

static void *mallocx_stub(size_t n, int flags)
{
	je_resolve();
	return ((mallocx_fn)je[MALLOCX])(n, flags);
}

void *mallocx(size_t n, int flags)
{
	if (next_not_sampled(n))
		return ((mallocx_fn)je[MALLOCX])(n, flags);
	return mallocx_slow(n, flags);
}

/* Is p a block of the runtime's range (pool or region)? */
static bool in_range(const void *p)
{
	return AP_UNLIKELY(rt_maybe_ours(p)) && rt_classify(p) == RT_OWNER_RANGE;
}

/* rallocx of a block the runtime holds (range or sampled set). */
static void *rallocx_ours(void *p, size_t n, int flags)
{
	if (!flag_align(flags) && !flag_zero(flags))
		return rt_entry_realloc(p, n); /* the runtime's own realloc knows p */
	void *q = rt_entry_mallocx(n, flags);
	if (!q)
		return NULL;
	size_t old = in_range(p) ? rt_usable_range(p) : rt_real.malloc_usable_size(p);
	memcpy(q, p, old < n ? old : n);
	rt_entry_free(p);
	return q;
}

static __attribute__((noinline)) void *rallocx_slow(void *p, size_t n, int flags)
{
	je_resolve();
	if (AP_UNLIKELY(rt_maybe_ours(p)) && rt_classify(p) != RT_OWNER_NONE)
		return rallocx_ours(p, n, flags);
	if (next_not_sampled(n))
		return ((rallocx_fn)je[RALLOCX])(p, n, flags);
	ap_sample_info info;
	if (!rt_sample_begin(n, &info))
		return ((rallocx_fn)je[RALLOCX])(p, n, flags);
	/* Sampled: move the block into the range, as realloc does. */
	void *q = rt_region_alloc(n, flag_align(flags), flag_zero(flags));
	if (q) {
		size_t old = ((sallocx_fn)je[SALLOCX])(p, 0);
		memcpy(q, p, old < n ? old : n);
		((dallocx_fn)je[DALLOCX])(p, flags & ~0x7f);
	} else {
		q = ((rallocx_fn)je[RALLOCX])(p, n, flags);
	}
	rt_sample_end(q, &info);
	return q;
}

void *rallocx(void *p, size_t n, int flags)
{
	return rallocx_slow(p, n, flags);
}

size_t xallocx(void *p, size_t n, size_t extra, int flags)
{
	je_resolve();
	if (in_range(p))
		return rt_usable_range(p); /* never resized in place */
	return ((xallocx_fn)je[XALLOCX])(p, n, extra, flags);
}

size_t sallocx(const void *p, int flags)
{
	je_resolve();
	if (in_range(p))
		return rt_usable_range((void *)(uintptr_t)p);
	return ((sallocx_fn)je[SALLOCX])(p, flags);
}

static void dallocx_stub(void *p, int flags)
{
	je_resolve();
	((dallocx_fn)je[DALLOCX])(p, flags);
}

static void sdallocx_stub(void *p, size_t n, int flags)
{
	je_resolve();
	((sdallocx_fn)je[SDALLOCX])(p, n, flags);
}

void dallocx(void *p, int flags)
{
	if (AP_UNLIKELY(rt_maybe_ours(p)) && next_free_ours(p))
		return;
	((dallocx_fn)je[DALLOCX])(p, flags);
}

void sdallocx(void *p, size_t n, int flags)
{
	if (AP_UNLIKELY(rt_maybe_ours(p)) && next_free_ours(p))
		return;
	((sdallocx_fn)je[SDALLOCX])(p, n, flags);
}

size_t nallocx(size_t n, int flags)
{
	je_resolve();
	return ((nallocx_fn)je[NALLOCX])(n, flags);
}

RT_HIDDEN_ALIAS(mallocx, rt_entry_mallocx, "mallocx");

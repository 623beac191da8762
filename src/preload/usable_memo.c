/*
 * usable_memo.c: the usable size the underlying allocator would give a
 * request (rt_underlying_usable, runtime_core.h), for sampled blocks the
 * runtime serves from its own range.
 */
#include "runtime_core.h"

#include "boot.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>

/*
 * A sampled block served from allocprof's range is whole pages, which the
 * program never sees as its allocator's usable size; weighted by 1/pi it
 * made --usable report ~4096 x N for sites of 16-byte objects (issue 12,
 * item 5). So each sample asks what the allocator would have given.
 *
 * Without allocating, when the allocator can say: jemalloc's and
 * tcmalloc's nallocx(size, 0), mimalloc's mi_good_size(size), and glibc's
 * chunk arithmetic (below). Asking by allocation (malloc, its usable
 * size, free) is the fallback for any other allocator, and it is not
 * free: on glibc, freeing a chunk of 64 KiB or more consolidates the heap
 * and may trim it, so the pages of the next request fault in again. On
 * malloc_workload_bench mixed (10M operations, 14,000 samples) that was
 * 3,300 page faults, about 3 us each on this machine's VM.
 *
 * Each way is checked once against the allocation path on a few sizes
 * (resolve_way) before it is trusted. Answers of the allocation path are memoised
 * in a direct-mapped table of packed (size, slack) words, racy but never
 * wrong: an entry is whole or replaced whole.
 */
#define USABLE_MEMO 1024
static _Atomic uint64_t usable_memo[USABLE_MEMO];

enum usable_way { WAY_UNRESOLVED, WAY_RESOLVING, WAY_ASK, WAY_NALLOCX, WAY_GOOD_SIZE, WAY_GLIBC };
static _Atomic int usable_way;
static size_t (*way_nallocx)(size_t, int);
static size_t (*way_good_size)(size_t);
/* Requests of this many bytes or more are asked by allocation even so:
 * the first probe size where the way disagreed with the allocator. */
static uint64_t way_limit = UINT64_MAX;

/* The allocator's answer by allocation, or 0 when it gave none (no
 * block, or a usable size below the request: tcmalloc_minimal answers 0
 * for its first blocks while it sets itself up). */
static uint64_t ask_raw(uint64_t size)
{
	void *q = rt_real.malloc(size);
	uint64_t u = q ? rt_real.malloc_usable_size(q) : 0;
	rt_real.free(q);
	return u >= size ? u : 0;
}

static uint64_t ask(uint64_t size)
{
	size_t i = (size_t)((size * 0x9E3779B97F4A7C15ULL) >> 54) & (USABLE_MEMO - 1);
	uint64_t e = atomic_load_explicit(&usable_memo[i], memory_order_relaxed);
	if (e && e >> 20 == size)
		return size + (e & 0xFFFFF);
	uint64_t u = ask_raw(size);
	if (!u)
		return size; /* no answer: not memoised, asked again next time */
	if (size < (1ULL << 44) && u - size < (1ULL << 20))
		atomic_store_explicit(&usable_memo[i], size << 20 | (u - size),
				      memory_order_relaxed);
	return u;
}

/*
 * glibc (2.26 and later, x86-64 and the other 64-bit ports without memory
 * tagging): a request of n bytes takes a chunk of max(32, n + 8 rounded up
 * to 16) bytes, of which all but the 8-byte size word are usable. A
 * request at or above the mmap threshold (128 KiB at first; glibc raises
 * it to the size of each mmapped chunk the program frees, up to 32 MiB)
 * may be mmapped instead, with page-rounded usable size: which one the
 * block would have been is not knowable, and the two differ by less than
 * a page (under 3.2% at 128 KiB). The heap's answer is the one given.
 */
static uint64_t glibc_usable(uint64_t n)
{
	if (n > UINT64_MAX - 32)
		return n;
	uint64_t chunk = (n + 8 + 15) & ~(uint64_t)15;
	return (chunk < 32 ? 32 : chunk) - 8;
}

static uint64_t by_way(int way, uint64_t size)
{
	if (size >= way_limit)
		way = WAY_ASK;
	switch (way) {
	case WAY_NALLOCX: {
		size_t u = way_nallocx((size_t)size, 0);
		return u >= size ? u : size; /* 0: too large for it */
	}
	case WAY_GOOD_SIZE: {
		size_t u = way_good_size((size_t)size);
		return u >= size ? u : size;
	}
	case WAY_GLIBC:
		return glibc_usable(size);
	default:
		return ask(size);
	}
}

static void *sym_of_home(const char *name, const void *home)
{
	void *a = boot_next_sym(name);
	return a && home && boot_object_of(a) == home ? a : NULL;
}

/* Does `way` answer as the allocator does for a request of n bytes?
 * (Its answer is at least n; where allocating gives none, that stands.) */
static bool agrees(int way, uint64_t n)
{
	uint64_t u = by_way(way, n), a = ask_raw(n);
	return u >= n && (a == 0 || a == u);
}

/*
 * Which way answers for the allocator underneath (once, inside the
 * runtime: dlsym and the probes' allocations go straight to it). A way
 * that disagrees with the allocator below 64 KiB is not used at all; one
 * that disagrees only above is used below the first size where it did
 * (mimalloc 2.0's mi_good_size rounds large requests to pages, where the
 * allocator's own bins are up to 1/8 coarser). glibc's arithmetic is
 * probed only under its first mmap threshold (above, see glibc_usable).
 */
static int resolve_way(void)
{
	static const uint64_t probes[] = {1,     16,    24,    25,     100,    1000,  4000,
					  4097,  20000, 65000, 70001, 131073, 300001, 1048577};
	void *m;
	memcpy(&m, &rt_real.malloc, sizeof m);
	const void *home = boot_object_of(m);
	int way = WAY_ASK;
	void *f;
	if ((f = sym_of_home("nallocx", home))) {
		memcpy(&way_nallocx, &f, sizeof f);
		way = WAY_NALLOCX;
	} else if ((f = sym_of_home("mi_good_size", home))) {
		memcpy(&way_good_size, &f, sizeof f);
		way = WAY_GOOD_SIZE;
	} else if (sym_of_home("gnu_get_libc_version", home)) {
		way = WAY_GLIBC;
	}
	uint64_t top = way == WAY_GLIBC ? (uint64_t)128 << 10 : UINT64_MAX;
	for (size_t i = 0; way != WAY_ASK && i < sizeof probes / sizeof probes[0]; i++) {
		if (probes[i] >= top || agrees(way, probes[i]))
			continue;
		if (probes[i] < (64 << 10))
			way = WAY_ASK;
		else
			way_limit = probes[i];
		break;
	}
	return way;
}

uint64_t rt_underlying_usable(uint64_t size)
{
	int way = atomic_load_explicit(&usable_way, memory_order_acquire);
	if (AP_UNLIKELY(way == WAY_UNRESOLVED)) {
		int expect = WAY_UNRESOLVED;
		if (atomic_compare_exchange_strong(&usable_way, &expect, WAY_RESOLVING)) {
			way = resolve_way();
			atomic_store_explicit(&usable_way, way, memory_order_release);
		} else {
			way = WAY_ASK; /* another thread is resolving */
		}
	}
	return by_way(way, size);
}

const char *rt_underlying_usable_way(void)
{
	switch (atomic_load_explicit(&usable_way, memory_order_acquire)) {
	case WAY_ASK:
		return "ask";
	case WAY_NALLOCX:
		return "nallocx";
	case WAY_GOOD_SIZE:
		return "mi_good_size";
	case WAY_GLIBC:
		return "glibc";
	default:
		return "unresolved";
	}
}

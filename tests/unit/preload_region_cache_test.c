/*
 * preload_region_cache_test.c: the warm cache of freed runs in the region
 * (src/preload/region.h): its budget (a floor, a share of the live pages),
 * least-recently-freed eviction (a freed run that would push out several
 * goes cold itself), decay of runs nobody reuses, slack kept
 * or given back, reuse of a slightly longer warm run, and the accounting
 * checked against the kernel: after every step of a seeded random sequence
 * the pages mincore reports resident in the range are exactly
 * committed + cached + slack, and cached + slack stays within the budget.
 * Blocks written only in part: a freed large one is kept warm for the
 * pages it has resident (mincore), and the accounting is then an upper
 * bound of what the kernel holds, still within the budget.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "aptest.h"
#include "region.h"

#define MIB ((size_t)1 << 20)

static size_t page(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* A region of 64 MiB, no prefix, with the given budget and no decay. */
static void setup(region *r, size_t floor_pages, unsigned share)
{
	if (region_init(r, 64 * MIB, 64 * MIB, 0) != 0)
		ap_test_fail(__FILE__, __LINE__, "region_init failed");
	r->cache_floor = floor_pages;
	r->cache_share = share;
	r->decay = 0;
}

/* A block of `pages` pages with every page written (so it is resident);
 * a failure is recorded and a static page returned, so the test goes on
 * to report it rather than crash. */
static unsigned char *take(region *r, size_t pages, unsigned char fill)
{
	static unsigned char dummy[1];
	size_t usable = 0;
	unsigned char *p = region_alloc(r, pages * page(), 0, false, &usable);
	if (!p || usable != pages * page()) {
		ap_test_fail(__FILE__, __LINE__, "region_alloc of %zu pages: %p, usable %zu",
			     pages, (void *)p, usable);
		return dummy;
	}
	memset(p, fill, usable);
	return p;
}

/* Pages of the range the kernel has resident (SIZE_MAX if mincore fails). */
static size_t resident(const region *r)
{
	size_t n = r->rw_pages - r->prefix_pages;
	static unsigned char vec[(64 * MIB) / 4096];
	if (n == 0)
		return 0;
	if (n > sizeof vec ||
	    mincore((void *)(r->base + (r->prefix_pages << r->page_shift)), n << r->page_shift,
		    vec) != 0)
		return SIZE_MAX;
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += vec[i] & 1;
	return k;
}

AP_TEST(default_budget_is_a_floor_and_a_share)
{
	region r;
	AP_CHECK_EQ_INT(region_init(&r, 256 * MIB, 256 * MIB, 0), 0);
	size_t ps = page();
	AP_CHECK_EQ_U64(r.cache_floor, REGION_CACHE_FLOOR / ps);
	AP_CHECK_EQ_U64(r.cache_share, REGION_CACHE_SHARE);
	AP_CHECK_EQ_U64(region_cache_limit(&r), REGION_CACHE_FLOOR / ps);
	/* Live pages beyond share * floor raise the budget to their share. */
	size_t big = REGION_CACHE_SHARE * (REGION_CACHE_FLOOR / ps) * 2;
	void *p = region_alloc(&r, big * ps, 0, false, NULL);
	AP_CHECK(p != NULL);
	AP_CHECK_EQ_U64(region_cache_limit(&r), big / REGION_CACHE_SHARE);
	AP_CHECK(region_free(&r, p, NULL));
	/* Freed, it no longer counts: the run (larger than the floor) goes
	 * cold at once and nothing stays cached. */
	AP_CHECK_EQ_U64(region_cache_limit(&r), REGION_CACHE_FLOOR / ps);
	AP_CHECK_EQ_U64(r.cached, 0);
	region_destroy(&r);
}

AP_TEST(the_oldest_freed_runs_give_their_pages_back_first)
{
	region r;
	setup(&r, 8, 0); /* 8 pages of cache */
	unsigned char *a = take(&r, 3, 0xa1), *b = take(&r, 4, 0xb2), *c = take(&r, 2, 0xc3);
	uint64_t mad = r.st.madvise_calls;
	AP_CHECK(region_free(&r, a, NULL));
	AP_CHECK(region_free(&r, b, NULL));
	AP_CHECK_EQ_U64(r.cached, 7);
	AP_CHECK_EQ_U64(r.st.madvise_calls, mad); /* within budget: no call */
	/* c's 2 pages make 9 > 8: a (oldest) goes, one call; b and c stay. */
	AP_CHECK(region_free(&r, c, NULL));
	AP_CHECK_EQ_U64(r.cached, 6);
	AP_CHECK_EQ_U64(r.st.madvise_calls, mad + 1);
	/* The newest comes back warm (its data still there, no fault) ... */
	unsigned char *c2 = region_alloc(&r, 2 * page(), 0, false, NULL);
	AP_CHECK(c2 == c);
	AP_CHECK(c2[0] == 0xc3 && c2[2 * page() - 1] == 0xc3);
	/* ... so does b (taken first: a warm run up to twice as long would
	 * serve a's size), and the evicted a is cold: same run, zero pages. */
	unsigned char *b2 = region_alloc(&r, 4 * page(), 0, false, NULL);
	AP_CHECK(b2 == b && b2[0] == 0xb2);
	unsigned char *a2 = region_alloc(&r, 3 * page(), 0, false, NULL);
	AP_CHECK(a2 == a);
	AP_CHECK(a2[0] == 0 && a2[3 * page() - 1] == 0);
	AP_CHECK_EQ_U64(r.st.warm_allocs, 2);
	AP_CHECK_EQ_U64(r.st.cold_allocs, 1);
	AP_CHECK_EQ_U64(r.st.fresh_allocs, 3);
	region_destroy(&r);
}

AP_TEST(a_run_that_would_push_out_several_goes_cold_itself)
{
	/* Each run given back is a madvise (a TLB shootdown in a threaded
	 * program): c's 5 pages would push out both a and b (two calls), so
	 * c goes cold instead (one call) and a and b stay warm. */
	region r;
	setup(&r, 8, 0);
	unsigned char *a = take(&r, 3, 0xa1), *b = take(&r, 4, 0xb2), *c = take(&r, 5, 0xc3);
	uint64_t mad = r.st.madvise_calls;
	AP_CHECK(region_free(&r, a, NULL));
	AP_CHECK(region_free(&r, b, NULL));
	AP_CHECK(region_free(&r, c, NULL));
	AP_CHECK_EQ_U64(r.cached, 7);
	AP_CHECK_EQ_U64(r.st.madvise_calls, mad + 1);
	unsigned char *c2 = region_alloc(&r, 5 * page(), 0, false, NULL);
	AP_CHECK(c2 == c);
	AP_CHECK(c2[0] == 0 && c2[5 * page() - 1] == 0);
	unsigned char *a2 = region_alloc(&r, 3 * page(), 0, false, NULL);
	unsigned char *b2 = region_alloc(&r, 4 * page(), 0, false, NULL);
	AP_CHECK(a2 == a && b2 == b);
	AP_CHECK(a2[0] == 0xa1 && b2[4 * page() - 1] == 0xb2);
	AP_CHECK_EQ_U64(r.st.warm_allocs, 2);
	AP_CHECK_EQ_U64(r.st.cold_allocs, 1);
	region_destroy(&r);
}

AP_TEST(a_run_larger_than_the_budget_goes_cold_without_evicting_others)
{
	region r;
	setup(&r, 8, 0);
	unsigned char *a = take(&r, 2, 1), *big = take(&r, 20, 2);
	AP_CHECK(region_free(&r, a, NULL));
	AP_CHECK(region_free(&r, big, NULL));
	AP_CHECK_EQ_U64(r.cached, 2); /* a stays warm */
	AP_CHECK(region_alloc(&r, 2 * page(), 0, false, NULL) == a);
	region_destroy(&r);
}

AP_TEST(the_budget_follows_the_live_pages)
{
	region r;
	setup(&r, 0, 4); /* a quarter of the live pages, no floor */
	unsigned char *live = take(&r, 40, 9); /* budget 10 pages */
	AP_CHECK_EQ_U64(region_cache_limit(&r), 10);
	unsigned char *x[6];
	for (int i = 0; i < 6; i++)
		x[i] = take(&r, 3, (unsigned char)i);
	/* Live 58 pages: budget 14; frees lower it as they go. */
	for (int i = 0; i < 6; i++)
		AP_CHECK(region_free(&r, x[i], NULL));
	AP_CHECK_EQ_U64(region_cache_limit(&r), 10);
	AP_CHECK(r.cached <= 10);
	AP_CHECK_EQ_U64(r.cached, 9); /* the three newest 3-page runs */
	/* The live block freed: budget 0, so it goes cold and the cache
	 * empties. */
	AP_CHECK(region_free(&r, live, NULL));
	AP_CHECK_EQ_U64(r.cached, 0);
	AP_CHECK_EQ_U64(resident(&r), 0);
	region_destroy(&r);
}

AP_TEST(runs_nobody_reuses_decay)
{
	region r;
	setup(&r, 1024, 0);
	r.decay = 3;
	unsigned char *old = take(&r, 7, 1);
	unsigned char *y[4];
	for (int i = 0; i < 4; i++)
		y[i] = take(&r, 1, 2);
	AP_CHECK(region_free(&r, old, NULL)); /* frees = 1, stamp 1 */
	AP_CHECK(region_free(&r, y[0], NULL));
	AP_CHECK(region_free(&r, y[1], NULL));
	AP_CHECK(region_free(&r, y[2], NULL)); /* frees = 4: 3 later frees */
	AP_CHECK_EQ_U64(r.cached, 10);
	AP_CHECK(region_free(&r, y[3], NULL)); /* 4 later: old decays */
	AP_CHECK_EQ_U64(r.cached, 4); /* y[0..3] warm (y[0]: 3 later frees) */
	AP_CHECK(region_alloc(&r, 7 * page(), 0, true, NULL) == old);
	AP_CHECK_EQ_U64(r.st.cold_allocs, 1);
	region_destroy(&r);
}

AP_TEST(a_longer_warm_run_leaves_slack_within_the_budget)
{
	region r;
	setup(&r, 64, 0);
	size_t ps = page();
	unsigned char *a = take(&r, 30, 0x5e); /* class of 32 pages */
	AP_CHECK(region_free(&r, a, NULL));
	AP_CHECK_EQ_U64(r.cached, 30);
	uint64_t mad = r.st.madvise_calls;
	size_t usable = 0;
	unsigned char *b = region_alloc(&r, 20 * ps, 0, true, &usable);
	AP_CHECK(b == a);
	AP_CHECK_EQ_U64(usable, 20 * ps); /* the block's own pages only */
	AP_CHECK_EQ_U64(r.committed, 20);
	AP_CHECK_EQ_U64(r.slack, 10);     /* kept, counted in the budget */
	AP_CHECK_EQ_U64(r.cached, 0);
	AP_CHECK_EQ_U64(r.st.madvise_calls, mad); /* no system call */
	AP_CHECK(b[0] == 0 && b[20 * ps - 1] == 0); /* calloc: zeroed */
	AP_CHECK_EQ_U64(resident(&r), 30);
	/* Freed again: all 30 resident pages go back to the cache. */
	AP_CHECK(region_free(&r, b, NULL));
	AP_CHECK_EQ_U64(r.slack, 0);
	AP_CHECK_EQ_U64(r.cached, 30);
	/* With no room in the budget the excess is given back at once. */
	r.cache_floor = 0;
	b = region_alloc(&r, 20 * ps, 0, false, &usable);
	AP_CHECK(b == a);
	AP_CHECK_EQ_U64(r.slack, 0);
	AP_CHECK_EQ_U64(r.st.madvise_calls, mad + 1);
	AP_CHECK_EQ_U64(resident(&r), 20);
	AP_CHECK(b[25 * ps] == 0); /* the run is accessible; the tail is zero */
	region_destroy(&r);
}

AP_TEST(a_warm_run_up_to_twice_as_long_serves_a_smaller_class)
{
	region r;
	setup(&r, 64, 0);
	unsigned char *four = take(&r, 4, 4), *seven = take(&r, 7, 7);
	AP_CHECK(region_free(&r, four, NULL));
	AP_CHECK(region_free(&r, seven, NULL));
	/* 3 pages: its class is empty; the 4-page run (<= 6 pages) serves. */
	size_t usable = 0;
	AP_CHECK(region_alloc(&r, 3 * page(), 0, false, &usable) == four);
	AP_CHECK_EQ_U64(usable, 3 * page());
	AP_CHECK_EQ_U64(r.slack, 1);
	/* 2 pages: only the 7-page run is warm, too long: a fresh run. */
	unsigned char *two = region_alloc(&r, 2 * page(), 0, false, NULL);
	AP_CHECK(two != seven && two != four);
	AP_CHECK_EQ_U64(r.st.fresh_allocs, 3);
	region_destroy(&r);
}

/* xorshift64: the random sequence below is the same on every run. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

AP_TEST(copying_a_large_block_out_gives_its_pages_back_as_it_goes)
{
	region r;
	AP_CHECK_EQ_INT(region_init(&r, 256 * MIB, 256 * MIB, 0), 0);
	size_t ps = page(), chunks = 3, len = chunks * REGION_COPY_CHUNK + 5000;
	unsigned char *p = region_alloc(&r, len, 0, false, NULL);
	unsigned char *dst = malloc(len);
	AP_CHECK(p != NULL && dst != NULL);
	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)(i * 7 + i / 4096);
	size_t pages = (len + ps - 1) / ps;
	AP_CHECK_EQ_U64(resident(&r), pages);
	uint64_t calls = r.st.madvise_calls;
	region_copy_out(&r, dst, p, len);
	for (size_t i = 0; i < len; i++)
		if (dst[i] != (unsigned char)(i * 7 + i / 4096)) {
			AP_CHECK_MSG(false, "byte %zu not copied", i);
			break;
		}
	/* Whole chunks went back, one madvise each; the tail (5000 bytes,
	 * two pages) is still resident until the block is freed. */
	AP_CHECK_EQ_U64(r.st.madvise_calls, calls + chunks);
	AP_CHECK_EQ_U64(resident(&r), pages - chunks * REGION_COPY_CHUNK / ps);
	AP_CHECK(region_free(&r, p, NULL));

	/* Below one chunk: a plain copy, the source left alone. */
	size_t small = REGION_COPY_CHUNK - 1;
	p = region_alloc(&r, small, 0, false, NULL);
	AP_CHECK(p != NULL);
	memset(p, 0x5a, small);
	calls = r.st.madvise_calls;
	region_copy_out(&r, dst, p, small);
	AP_CHECK_EQ_U64(r.st.madvise_calls, calls);
	AP_CHECK(dst[0] == 0x5a && dst[small - 1] == 0x5a && p[small - 1] == 0x5a);
	AP_CHECK(region_free(&r, p, NULL));
	free(dst);
	region_destroy(&r);
}

/* A block of `pages` pages with only its first and last byte written. */
static unsigned char *take_sparse(region *r, size_t pages, unsigned char fill)
{
	static unsigned char dummy[1];
	unsigned char *p = region_alloc(r, pages * page(), 0, false, NULL);
	if (!p) {
		ap_test_fail(__FILE__, __LINE__, "region_alloc of %zu pages failed", pages);
		return dummy;
	}
	p[0] = fill;
	p[pages * page() - 1] = fill;
	return p;
}

AP_TEST(a_large_run_written_in_part_stays_warm_for_its_resident_pages)
{
	/* Budget 8 pages; the block has 64, two of them written. Counted
	 * whole it would go cold (a madvise now, two page faults at the
	 * next use); counted by mincore it is 2 pages and stays warm. */
	region r;
	setup(&r, 8, 0);
	unsigned char *a = take_sparse(&r, 64, 0x11);
	uint64_t mad = r.st.madvise_calls, probes = r.st.mincore_calls;
	AP_CHECK(region_free(&r, a, NULL));
	AP_CHECK_EQ_U64(r.cached, 2);
	AP_CHECK_EQ_U64(r.st.madvise_calls, mad);
	AP_CHECK(r.st.mincore_calls > probes);
	AP_CHECK_EQ_U64(resident(&r), 2);
	/* A block of 40 pages reuses it (class 64 is at most twice 40's):
	 * no system call, the data is the old block's, and the 24 pages
	 * beyond the block are slack counted at most 2. */
	unsigned char *b = region_alloc(&r, 40 * page(), 0, false, NULL);
	AP_CHECK(b == a);
	AP_CHECK(b[0] == 0x11);
	AP_CHECK_EQ_U64(r.st.madvise_calls, mad);
	AP_CHECK_EQ_U64(r.st.warm_allocs, 1);
	AP_CHECK_EQ_U64(r.slack, 2);
	AP_CHECK(resident(&r) <= r.committed + r.cached + r.slack);
	AP_CHECK(region_free(&r, b, NULL));

	/* The same block written whole does not fit: it goes cold. */
	unsigned char *c = take(&r, 64, 0x22);
	mad = r.st.madvise_calls;
	AP_CHECK(region_free(&r, c, NULL));
	AP_CHECK(r.st.madvise_calls > mad);
	AP_CHECK(r.cached <= 8);
	/* calloc's zero covers the whole extent of a warm run, whatever
	 * mincore said of it. */
	unsigned char *d = take_sparse(&r, 64, 0x33);
	AP_CHECK(region_free(&r, d, NULL));
	unsigned char *z = region_alloc(&r, 64 * page(), 0, true, NULL);
	AP_CHECK(z != NULL);
	size_t nonzero = 0;
	for (size_t i = 0; z && i < 64 * page(); i++)
		nonzero += z[i] != 0;
	AP_CHECK_EQ_U64(nonzero, 0);
	region_destroy(&r);
}

enum { SLOTS = 24, STEPS = 3000 };

/*
 * 3000 seeded random steps on a region with a 24-page floor, 1/8 share
 * and decay 50: allocate (1..16 pages mostly, up to 96 now and then),
 * resize in place, free. With `sparse`, half the blocks are written only
 * at their first and last byte (take_sparse), large ones come more often,
 * and a resized block gets its last byte written; else every page of every
 * block is written. After each step the pages mincore reports resident
 * must equal committed + cached + slack (sparse: be at most that), and
 * cached + slack stay within the budget. Sets r up; *live_pages gets the
 * pages of the blocks still live, for the caller to check r against
 * before region_destroy.
 */
static void random_steps(region *r, uint64_t seed, bool sparse, size_t *live_pages)
{
	setup(r, 24, 8);
	r->decay = 50;
	unsigned char *live[SLOTS] = { 0 };
	size_t pages_of[SLOTS] = { 0 };
	for (int step = 0; step < STEPS; step++) {
		unsigned i = (unsigned)(rnd(&seed) % SLOTS);
		uint64_t op = rnd(&seed) % 8;
		if (!live[i]) {
			size_t n = 1 + rnd(&seed) % ((sparse ? op < 3 : op == 0) ? 96 : 16);
			live[i] = !sparse || op & 1 ? take(r, n, (unsigned char)step)
						     : take_sparse(r, n, (unsigned char)step);
			pages_of[i] = n;
		} else if (op < 2) {
			size_t n = 1 + rnd(&seed) % 40, usable = 0;
			if (region_resize(r, live[i], n * page(), &usable)) {
				if (sparse)
					live[i][usable - 1] = 1;
				else
					memset(live[i], 1, usable);
				pages_of[i] = n;
			}
		} else {
			AP_CHECK(region_free(r, live[i], NULL));
			live[i] = NULL;
		}
		size_t res = resident(r), acc = r->committed + r->cached + r->slack;
		AP_CHECK_MSG(sparse ? res <= acc : res == acc,
			     "step %d: %zu resident, accounted %zu + %zu + %zu", step, res,
			     r->committed, r->cached, r->slack);
		AP_CHECK_MSG(r->cached + r->slack <= region_cache_limit(r) || r->cached == 0,
			     "step %d: cache %zu + slack %zu over budget %zu", step, r->cached,
			     r->slack, region_cache_limit(r));
	}
	*live_pages = 0;
	for (unsigned i = 0; i < SLOTS; i++)
		*live_pages += live[i] ? pages_of[i] : 0;
}

AP_TEST(resident_pages_are_exactly_what_the_region_accounts)
{
	region r;
	size_t live_pages = 0;
	random_steps(&r, 0x9e3779b97f4a7c15u, false, &live_pages);
	AP_CHECK_EQ_U64(r.committed, live_pages);
	AP_CHECK(r.st.warm_allocs > 0 && r.st.cold_allocs > 0);
	region_destroy(&r);
}

AP_TEST(accounting_bounds_what_is_resident_when_blocks_are_written_in_part)
{
	region r;
	size_t live_pages = 0;
	random_steps(&r, 0x51ed270b2f6b3c1du, true, &live_pages);
	AP_CHECK(r.st.mincore_calls > 0);
	region_destroy(&r);
}

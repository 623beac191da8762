/*
 * region.h: the allocprof-owned address range that serves sampled blocks.
 *
 * Design (2) of docs/DESIGN.md's free() fast path: if every sampled block lives
 * inside one range reserved by the runtime, free() decides "was this pointer
 * sampled?" with a subtraction and a compare against two globals, and only
 * pointers inside the range take the slow path. The range is reserved once
 * with mmap(PROT_NONE): it costs address space, not memory or commit.
 * With range=1 (off by default: src/preload/README.md, "Where sampled
 * blocks live") the runtime gives it the sampled blocks below range_max
 * (64 KiB by default, config.h): the larger ones stay with the
 * allocator, so its machinery for long runs (power-of-two classes,
 * mincore counting, copy-out on realloc) serves range_max=0, over-aligned
 * blocks and its unit tests.
 *
 * Blocks are page-granular runs: a block of n bytes (aligned to `align`)
 * uses ceil(n / page) pages; an alignment above the page size
 * over-reserves align/page - 1 pages and puts the block at the first aligned
 * page of the run. The range is readable and writable below a high-water
 * mark that mprotect raises REGION_RW_STEP pages (1 MiB) or more at a time
 * as fresh runs need it, and never lowers: the used part stays a single
 * mapping (no vm.max_map_count trouble, one system call per MiB of fresh
 * runs, none on reuse), and the rest of the reservation costs no memory, no
 * commit charge, and is absent from core dumps. Making pages writable is
 * where the kernel applies its overcommit policy (the reservation has no
 * MAP_NORESERVE), so a block the kernel would refuse the allocator is
 * refused here too, and served (or refused) by the allocator instead.
 *
 * Freed runs go on free lists by run length: exact page counts up to
 * REGION_EXACT pages, powers of two above (a run of that class is reserved
 * whole, but only the pages a block touches are ever backed, so the
 * rounding costs address space only). A freed run either keeps its pages
 * (warm: a sampled malloc that reuses it makes no system call and takes no
 * page fault) or gives them back with madvise(MADV_DONTNEED) (cold: private
 * anonymous pages then read as zero; reusing it faults them in again).
 * Fresh runs come from a bump pointer. When no run fits, region_alloc fails
 * and the caller serves the block elsewhere (design 1): the range never
 * makes an allocation fail.
 *
 * The warm cache is sized by what the program's sampling uses, not fixed:
 * - Budget: warm pages plus slack (below) stay within
 *   region_cache_limit = max(cache_floor, committed / cache_share) pages:
 *   a small floor (REGION_CACHE_FLOOR, 128 KiB) and otherwise 1/64 of
 *   the pages of the live sampled blocks, themselves part of the
 *   program's heap. So the cache never costs more than 128 KiB or 1.6%
 *   of the heap.
 * - Eviction is least recently freed first: a freed run is kept (newest),
 *   and the oldest warm runs give their pages back until the budget holds;
 *   except that a freed run which would push out more than one warm run
 *   goes cold itself. Each give-back is a madvise and, in a threaded
 *   program, a TLB shootdown on the other CPUs (perf: 10% of the CPU time
 *   of malloc_workload_bench with 2 threads went to sending them), so one
 *   call beats several, and the small runs it would have pushed out are
 *   the ones reused most (`bench/run memory` before and after: madvise
 *   per 10,000 sampled blocks 3352 -> 2413, warm reuse 66% -> 74% on
 *   malloc_workload_bench and 44% -> 66% on xthread_bench, same peaks).
 *   A run not reused within REGION_CACHE_DECAY later frees is given back
 *   too, so runs of sizes the program stopped sampling do not stay.
 * - Counting: a warm run counts the pages it has resident. A freed block
 *   is counted whole while that fits the budget without pushing out a
 *   warm run; when it would not, a block of REGION_PROBE_PAGES pages or
 *   more asks mincore which of its pages are resident (one system call,
 *   no TLB shootdown, unlike the madvise it may spare) and counts those.
 *   A program that writes only part of a large block (a vector reserved
 *   big, a calloc'd table filled sparsely, the benchmark's first and last
 *   byte) keeps its run warm for what it really holds. A warm run reused
 *   for a shorter block passes its count on as a bound of the slack's.
 *   A page mincore calls absent may still be in swap with old contents,
 *   so a run's extent (res_pages) is never shortened by the count:
 *   zeroing for calloc and giving back cover the whole extent.
 * - Reuse: a sampled malloc takes the newest warm run of its class, else a
 *   warm run of a class at most twice as long, else a cold run of its
 *   class, else a fresh one.
 * - Slack: a warm run longer than its new block (power-of-two classes)
 *   keeps its extra pages as the block's slack while the budget allows
 *   (no system call); beyond it they are given back at once. The block's
 *   usable size is its own pages, never the slack.
 * Fresh and given-back pages are zero; a warm run is zeroed only when the
 * caller asks (calloc). MADV_FREE is not used: its pages stay counted in
 * RSS until the kernel is short of memory, and a run reused before that
 * may or may not read as zero, which calloc could not tell.
 *
 * Per-block bookkeeping (the sample record, the run's geometry) is in a side
 * table indexed by page number, (p - base) >> page_shift, so every lookup is
 * O(1) and nothing is stored in the blocks themselves. The side table is
 * its own PROT_NONE reservation, made writable along with the range's
 * high-water mark, so it is charged (72 bytes per 4 KiB page) only for the
 * part of the range in use. Free runs are linked through the side-table slot of their first
 * page (their own pages are inaccessible).
 *
 * One mutex serialises every operation: they all run on the sampled slow
 * path, which is rare by construction at the rates the runtime uses the
 * range for. region_lock/unlock/reset_lock are for pthread_atfork.
 * No global state: the runtime owns one region, tests make their own.
 */
#ifndef AP_PRELOAD_REGION_H
#define AP_PRELOAD_REGION_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sampled_set.h"

#define REGION_EXACT 16u    /* runs of 1..16 pages: one class per count */
#define REGION_NCLASSES 48u /* then 32, 64, ... pages: 2^(5+k) */
/* The warm cache's budget (see above): at least REGION_CACHE_FLOOR bytes,
 * 1/REGION_CACHE_SHARE of the live blocks' pages when that is more. The
 * floor is what a small program pays, against a budget of 2 MiB for all
 * of the runtime (bench/suites/memory.sh). With 1 MiB, 80% of the sampled
 * blocks of malloc_workload_bench mixed reused a warm run, with 256 KiB
 * 65%, when the range took blocks up to 512 KiB; python and sqlite peaked
 * 0.9-1 MiB lower without a floor than with 1 MiB. Since the range takes
 * blocks below 64 KiB only (range_max), 128 KiB holds two runs of the
 * largest class. Going from 256 to 128 KiB (counts from verbose=1, one run
 * each): malloc_workload_bench mixed 4000000 kept 99% warm reuse, madvise
 * 0 -> 35 calls per 4100 samples; xthread_bench 400000 2 18 -> 59 per
 * 1600; alloc_heavy.py under python 22 -> 39 per 330, its range's peak
 * 452 -> 388 KiB. A 64 KiB floor took python's range to 356 KiB for 97,
 * 176 and 87 madvise calls. */
#ifndef REGION_CACHE_FLOOR
#define REGION_CACHE_FLOOR ((size_t)128 << 10)
#endif
#define REGION_CACHE_SHARE 64u
/* Freed blocks of this many pages or more are asked (mincore) how many of
 * their pages are resident: below it the call would cost more than the
 * pages it could spare. */
#define REGION_PROBE_PAGES 16u
/* A warm run not reused within this many later frees gives its pages back. */
#ifndef REGION_CACHE_DECAY
#define REGION_CACHE_DECAY 4096u
#endif
/* Under RLIMIT_AS the reservation (range + side table) takes at most
 * 1/REGION_AS_SHARE of the limit: the program keeps over 98% of it. */
#define REGION_AS_SHARE 64u
/* region_copy_out gives pages back in steps of this many bytes. */
#define REGION_COPY_CHUNK ((size_t)1 << 20)
/* Pages the accessible part grows by at least (1 MiB at 4 KiB pages). */
#define REGION_RW_STEP ((size_t)256)

enum region_slot_state { REGION_SLOT_NONE = 0, REGION_SLOT_LIVE, REGION_SLOT_FREE };

typedef struct region_slot {
	union {
		sample_rec rec;       /* LIVE: the block's sample record */
		struct {              /* FREE and warm: */
			uint64_t stamp; /* r->frees when it was freed */
			uint32_t prev;  /* class list: previous run + 1, 0 = head */
			uint32_t newer; /* age list: the next newer warm run + 1 */
			uint32_t older; /* and the next older one + 1 */
			uint32_t count; /* of its res_pages, those resident
					   (counted in cached) */
		} warm;
	};
	uint32_t run_pages;    /* pages of the run (its class size or more) */
	uint32_t off_pages;    /* pages from the run's start to the block */
	uint32_t used_pages;   /* LIVE: pages of the block */
	uint32_t res_pages;    /* LIVE: resident pages from the block's start
				  (used_pages + slack); FREE: the extent of
				  warm pages from the run's start (warm.count
				  of them resident), 0 = cold */
	union {
		uint32_t next;        /* FREE: next run of the list + 1, 0 = end */
		uint32_t slack_count; /* LIVE: of the slack (res_pages -
					 used_pages), the pages resident
					 (counted in slack) */
	};
	uint8_t state;         /* enum region_slot_state */
} region_slot;

/* Counters for the runtime's memory report and the tests. */
typedef struct region_stats {
	uint64_t warm_allocs;  /* blocks served by a warm run */
	uint64_t cold_allocs;  /* by a run whose pages had been given back */
	uint64_t fresh_allocs; /* by a run from the bump pointer */
	uint64_t madvise_calls;
	uint64_t mprotect_calls;
	uint64_t mincore_calls; /* counting a freed large block's pages */
	size_t peak_resident;  /* pages: max of committed + cached + slack */
	size_t peak_cache;     /* pages: max of cached + slack */
	/* Filled by region_get_stats from the current state: */
	size_t committed, cached, slack, limit; /* pages */
	size_t rw_bytes;       /* accessible part of the range */
	size_t slots_bytes;    /* accessible part of the side table */
} region_stats;

typedef struct region {
	uintptr_t base;        /* first byte of the reservation, 0 = none */
	size_t size;           /* bytes reserved */
	size_t page;           /* page size */
	unsigned page_shift;
	size_t npages;         /* size >> page_shift */
	size_t prefix_pages;   /* pages kept for the caller (always RW) */
	region_slot *slots;    /* npages entries */
	size_t slots_len;      /* bytes mapped for slots */
	size_t slots_rw;       /* bytes of slots made writable so far */
	pthread_mutex_t lock;
	size_t bump;           /* first page never handed out */
	size_t rw_pages;       /* pages below this index are accessible */
	uint32_t warm[REGION_NCLASSES]; /* warm runs, newest first (page + 1) */
	uint32_t cold[REGION_NCLASSES]; /* cold runs (page + 1) */
	uint32_t newest, oldest; /* the warm runs by free time (page + 1) */
	size_t live;           /* live blocks */
	size_t committed;      /* pages of live blocks */
	size_t cached;         /* pages kept in warm runs */
	size_t slack;          /* resident pages of live blocks beyond them
				  (their slack_count) */
	size_t cache_floor;    /* budget floor, pages (REGION_CACHE_FLOOR) */
	unsigned cache_share;  /* budget share of committed (0 = floor only) */
	uint64_t decay;        /* frees a warm run may wait (0 = forever) */
	uint64_t frees;        /* blocks freed so far: the decay clock */
	region_stats st;
	uint64_t refused;      /* allocations that failed (exhausted etc.) */
	uint32_t fail_commit;  /* test hook: the n-th next raise of the
				  high-water mark fails (1 = next) */
	set_filter *claim;     /* NULL, or a granule filter in which pages
				  are claimed (set_filter_claim) as they
				  become accessible, before any is handed
				  out */
} region;

/*
 * Reserve a range of `want` bytes, or failing that successively a quarter
 * of it, down to `min` bytes (both rounded to pages). The first `prefix`
 * bytes (rounded up to pages) are made readable and writable and are never
 * handed out: they are the caller's (the runtime's bootstrap pool). 0, or
 * AP_EINVAL (want < min, prefix too large) / AP_ENOMEM (nothing could be
 * reserved), leaving r->size == 0; such a region refuses every allocation.
 */
int region_init(region *r, size_t want, size_t min, size_t prefix);
/* Unmap everything (tests; the runtime keeps its range for life). */
void region_destroy(region *r);
/* Keep only the prefix: unmap the rest and the side table; from then on the
 * region refuses every allocation and contains nothing (size 0). The
 * prefix stays mapped at base. Only before any block was handed out. */
void region_retire(region *r);

/* Is p inside the range (prefix included)? */
static inline bool region_contains(const region *r, const void *p)
{
	return (uintptr_t)p - r->base < r->size;
}

/*
 * A block of at least n bytes aligned to `align` (0 = the page), readable
 * and writable, its first n bytes zero if `zero` (else they may hold a
 * freed block's data); *usable gets its usable size (n rounded up to
 * whole pages). NULL when
 * the range cannot serve it: no reservation, align not a power of two,
 * too large, range exhausted, or mprotect failed (commit limit).
 * The block's record is zero until region_set_rec.
 */
void *region_alloc(region *r, size_t n, size_t align, bool zero, size_t *usable);
/* As region_alloc, the run long enough for `reserve` bytes as well (room
 * for the block to grow in place: region_resize). */
void *region_alloc_run(region *r, size_t n, size_t align, bool zero, size_t reserve,
		       size_t *usable);
/* Resize live block p to n bytes in place, within its run: true (usable
 * updated) when the run has room, false (nothing done) otherwise or when
 * p is not a live block. Shrinking gives the pages beyond n back. */
bool region_resize(region *r, void *p, size_t n, size_t *usable);
/*
 * Copy the first len bytes of live block src to dst (outside src), giving
 * src's whole pages back as they are copied once len is at least
 * REGION_COPY_CHUNK: a large block that realloc moves is then never
 * resident twice (glibc moves its mmapped blocks with mremap, which copies
 * nothing; a plain copy made sqlite's peak 8 MiB higher for a moment).
 * src stays a live block (its pages read as zero from then on); the
 * caller frees it.
 */
void region_copy_out(region *r, void *dst, const void *src, size_t len);
/* Store p's record (p a live block). false if p is not one. */
bool region_set_rec(region *r, const void *p, const sample_rec *rec);
/* Copy p's record and usable size (either may be NULL). false if p is not
 * a live block (never allocated, an interior pointer, already freed). */
bool region_get(region *r, const void *p, sample_rec *rec, size_t *usable);
/* Return p's pages and copy its record out. false (nothing done) if p is
 * not a live block: a double free or a pointer the region never returned. */
bool region_free(region *r, void *p, sample_rec *rec_out);

/* The warm cache's budget now, in pages (caller holds the lock, or the
 * region is quiescent). */
size_t region_cache_limit(const region *r);
/* r's counters and current sizes, read under its lock. */
void region_get_stats(region *r, region_stats *out);

void region_lock(region *r);
void region_unlock(region *r);
/* In a fork child: reinitialise the lock (the parent's holders are gone). */
void region_reset_lock(region *r);

#endif
